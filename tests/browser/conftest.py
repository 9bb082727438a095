collect_ignore = [
    "widgets_demo.ipynb"
]  # served by Voila in tests/test_browser.py, not an nbval notebook
