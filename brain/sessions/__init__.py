"""Session rules that need no actor and no disk: diffs, request building, recovery plans."""
