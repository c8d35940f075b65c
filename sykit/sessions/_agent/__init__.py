"""Routers for agent sessions, written after the seed system's."""
