"""Onboarding and reports: `explain` and `coverage`, `doctor`, the `tutorial` and its practice tree.
Imports the layers below; returns text and data, prints nothing."""
