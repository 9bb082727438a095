collect_ignore = [
    "widgets_demo.ipynb"
]  # served by Voila in tests/notebook/test_browser.py, not an nbval notebook
