"""The GPU study: set up a GPU machine's Python, plan jobs to fit a time limit, run them one at a time, archive them."""
