"""The issue gate: clean the issue, ask the validator agent, parse its verdict, plan the labels."""
