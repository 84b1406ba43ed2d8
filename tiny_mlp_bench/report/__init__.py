"""The report: its numbers computed once from the records (the model, with an interval for every
value over runs), then worded and rendered as Markdown, charts and report/model.json without
computing anything more. scripts/render_report.py drives it; docs/layout.md maps its modules.
"""
