"""A live class: a teacher's steps followed and answered by students, kept in a store (store.py)."""
