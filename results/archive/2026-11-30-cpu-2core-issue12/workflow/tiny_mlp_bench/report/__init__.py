"""The report, computed once and then rendered.

model.py turns run and sweep records into a Report that holds numbers and identifiers only (the
ladders and targets from ladder.py, the crossover map from crossover_map.py);
markdown.py (with the one template report.md.j2 for the fixed prose) and plots.py render it.
scripts/render_report.py reads the records, builds the model once and writes every output.
"""
