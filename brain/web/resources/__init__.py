"""One resource class per route family of contract.md section 4."""
