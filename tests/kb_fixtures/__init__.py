"""Test fixtures of the knowledge-base backends: a fake Wikidata server answering in the real JSON formats."""
