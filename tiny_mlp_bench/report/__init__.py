"""The report: its numbers computed once from the records (the model, with an interval for every
value over runs), then worded and rendered as Markdown, charts and report/model.json without
computing anything more. render.py drives it (`tiny-mlp-bench report`); docs/layout.md maps its modules.
"""
