"""Huey tasks."""
