"""The report: its numbers computed once from the records, then only rendered as Markdown, charts and numbers.json."""
