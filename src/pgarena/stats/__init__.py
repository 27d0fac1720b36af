"""Pure numbers: confidence intervals, the stopping rule, ranks with ties. No pgarena imports."""
