"""Every place Brain touches Thespian's internals, and nothing else.

Each module here replaces or relies on a private part of Thespian 4.0.1; `fit.py` lists every
one of them (PATCHES) and refuses to run on a Thespian whose signatures differ. The rest of
Brain uses Thespian only through its public API, or through `endpoint.py` here.
"""
