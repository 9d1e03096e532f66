"""Render a markdown document with mistune (corpus: replay of a package nobody here wrote)."""

import mistune

DOCUMENT = """# Release notes

Version *2.1* brings **faster** parsing and a few [fixes](https://example.org/fixes).

- lists keep their `inline code`
- nested emphasis: *a **b** c*
  - a second level

1. first
2. second

> A quote with a line break  
> and a second line.

```python
def greet(name):
    return f"hello {name}"
```

| column | value |
|--------|-------|
| a      | 1     |
| b      | 2     |
"""

if __name__ == "__main__":
    html = mistune.create_markdown(plugins=["table", "strikethrough"])(DOCUMENT)
    print(len(html), html.count("<li>"), html.count("<td>"))
