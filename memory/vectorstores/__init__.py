"""Vector stores: where memory embeddings live and are searched (base.py: the contract)."""
