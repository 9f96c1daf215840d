"""`brain chat`: a terminal conversation with one session, built on the SDK (brain.client).

Standard library only, like the SDK it uses: it can run on a machine that has only the client.
"""
