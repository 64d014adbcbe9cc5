"""Maintainer comment commands: parse the first line of an issue comment, check, dispatch."""
