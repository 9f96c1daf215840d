"""One resource class per route family of docs/http-api.md."""
