"""Previews of types that need their own: exceptions, memoryviews, locks, generators, and
numpy / pandas / pydantic objects when those libraries are in use.

Library types are registered by class name, so nothing here imports numpy, pandas or pydantic:
a handler runs only for an object whose class is already loaded, and reaches its library
through ``sys.modules``. Handlers read library metadata (shape, dtype, fields) and bounded
slices; they never evaluate properties or computed fields of user classes.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

from .exceptions import describe_exception
from .preview import PREVIEWS, PreviewBuilder, static_attributes
from .reprs import clip, safe_repr

#: Arrays up to this many elements get min / max / mean in their summary; bigger ones only
#: metadata (a full pass over 100 MB at every capture would cost tens of milliseconds).
SUMMARY_MAX_ELEMENTS = 1_000_000
#: Elements / rows shown in ``head``.
HEAD_ITEMS = 10
HEAD_ROWS = 5


@PREVIEWS.register(BaseException)
def _exception(builder: PreviewBuilder, exc: BaseException, node: dict, depth: int,
               path_ids: set) -> dict:
    data = describe_exception(exc, limit=builder.options.max_repr)
    data["text"] = data["text"][-4000:]
    node["exception"] = data
    node["repr"] = builder.repr_of(exc)
    attrs = [(f".{k}", v) for k, v in (static_attributes(exc) or []) if not k.startswith("__")]
    if attrs and depth < builder.options.max_depth:
        node["children"] = [[label, builder.child(label, v, depth, path_ids)]
                            for label, v in attrs[:builder.options.max_items]]
    return node


@PREVIEWS.register(memoryview)
def _memoryview(builder: PreviewBuilder, view: memoryview, node: dict, depth: int,
                path_ids: set) -> dict:
    # Only metadata: reading the bytes would create another buffer export.
    try:
        node["len"] = view.nbytes
        flags = ", readonly" if view.readonly else ""
        node["repr"] = (f"<memoryview {view.nbytes} bytes, format {view.format!r}, "
                        f"shape {tuple(view.shape or ())}{flags}>")
    except ValueError:
        node["repr"] = "<released memoryview>"
    return node


@PREVIEWS.register("_thread.lock")
def _lock(builder: PreviewBuilder, lock: Any, node: dict, depth: int, path_ids: set) -> dict:
    node["locked"] = bool(lock.locked())  # a query, never an acquire
    node["repr"] = safe_repr(lock, builder.options.max_repr)
    return node


@PREVIEWS.register(types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
def _generator(builder: PreviewBuilder, gen: Any, node: dict, depth: int,
               path_ids: set) -> dict:
    if isinstance(gen, types.GeneratorType):
        node["state"] = inspect.getgeneratorstate(gen)
    elif isinstance(gen, types.CoroutineType):
        node["state"] = inspect.getcoroutinestate(gen)
    node["repr"] = safe_repr(gen, builder.options.max_repr)
    return node


def _jsonable_items(values: list, kind: str, limit: int) -> list:
    if kind == "b":
        return [bool(v) for v in values]
    if kind in "iu":
        return [int(v) for v in values]
    if kind == "f":
        return [float(v) for v in values]
    return [clip(str(v), limit) for v in values]


@PREVIEWS.register("numpy.ndarray")
def _ndarray(builder: PreviewBuilder, arr: Any, node: dict, depth: int, path_ids: set) -> dict:
    np = sys.modules["numpy"]
    kind = arr.dtype.kind
    node["shape"] = [int(n) for n in arr.shape]
    node["dtype"] = str(arr.dtype)
    node["len"] = int(arr.shape[0]) if arr.ndim else 1
    node["size"] = int(arr.size)
    node["nbytes"] = int(arr.nbytes)
    limit = builder.options.max_repr
    if kind == "O":
        # Element reprs would be user code, unbounded in number: metadata only.
        node["repr"] = f"array(<{arr.size} objects>, shape={tuple(arr.shape)}, dtype=object)"
        return node
    head = arr.flat[:HEAD_ITEMS]
    node["head"] = _jsonable_items(head.tolist(), kind, 80)
    text = np.array2string(arr, threshold=20, edgeitems=3, max_line_width=10_000,
                           separator=", ")
    node["repr"] = clip(f"array({' '.join(text.split())}, dtype={arr.dtype})", limit)
    if kind == "b" and 0 < arr.size <= SUMMARY_MAX_ELEMENTS:
        node["summary"] = {"true": int(np.count_nonzero(arr))}
    elif kind in "iuf" and 0 < arr.size <= SUMMARY_MAX_ELEMENTS:
        with np.errstate(all="ignore"):
            node["summary"] = {"min": _jsonable_items([arr.min()], kind, 80)[0],
                               "max": _jsonable_items([arr.max()], kind, 80)[0],
                               "mean": float(arr.mean())}
    return node


def _frame_head(frame: Any, limit: int) -> dict:
    rows = frame.iloc[:HEAD_ROWS, :HEAD_ITEMS]
    return {"columns": [clip(str(c), limit) for c in rows.columns],
            "index": [clip(str(i), limit) for i in rows.index],
            "rows": [[clip(str(v), limit) for v in row]
                     for row in rows.itertuples(index=False, name=None)]}


@PREVIEWS.register("pandas.core.frame.DataFrame", "pandas.DataFrame")  # pandas < 3, >= 3
def _dataframe(builder: PreviewBuilder, frame: Any, node: dict, depth: int,
               path_ids: set) -> dict:
    rows, cols = (int(n) for n in frame.shape)
    node["shape"] = [rows, cols]
    node["len"] = rows
    dtypes = {clip(str(c), 80): str(t) for c, t in
              list(frame.dtypes.items())[:builder.options.max_items]}
    node["dtypes"] = dtypes
    node["head"] = _frame_head(frame, 80)
    columns = ", ".join(f"{c} {t}" for c, t in dtypes.items())
    node["repr"] = clip(f"<DataFrame {rows} rows × {cols} columns: {columns}>",
                        builder.options.max_repr)
    return node


@PREVIEWS.register("pandas.core.series.Series", "pandas.Series")
def _series(builder: PreviewBuilder, series: Any, node: dict, depth: int,
            path_ids: set) -> dict:
    size = int(series.shape[0])
    node["shape"] = [size]
    node["len"] = size
    node["dtype"] = str(series.dtype)
    head = series.iloc[:HEAD_ITEMS]
    node["head"] = {"index": [clip(str(i), 80) for i in head.index],
                    "values": [clip(str(v), 80) for v in head.tolist()]}
    name = f" {clip(str(series.name), 40)!r}" if series.name is not None else ""
    values = ", ".join(node["head"]["values"])
    node["repr"] = clip(f"<Series{name} {size} × {series.dtype}: [{values}"
                        f"{', …' if size > HEAD_ITEMS else ''}]>", builder.options.max_repr)
    return node


@PREVIEWS.register("pydantic.main.BaseModel")
def _pydantic(builder: PreviewBuilder, model: Any, node: dict, depth: int,
              path_ids: set) -> dict | None:
    # model_dump() / repr() would evaluate computed fields (properties) and custom serializers;
    # the field values in the instance dict are the same tree, read statically.
    cls = type(model)
    fields = getattr(cls, "__pydantic_fields__", None)
    values = _instance_dict(model)
    if not isinstance(fields, dict) or values is None:
        return None
    ordered = [(name, values[name]) for name in fields if name in values]
    extra = _slot_value(model, "__pydantic_extra__")
    if isinstance(extra, dict):
        ordered.extend((str(k), v) for k, v in extra.items())
    limit = builder.options.max_items
    items = [(f".{k}", v) for k, v in ordered[:limit]]
    node["len"] = len(ordered)
    builder.fill_children(node, model, items, len(ordered), depth, path_ids, repr_text="-")
    kids = node.get("children") or []
    inner = ", ".join(f"{label[1:]}={child['repr']}" for label, child in kids)
    if len(ordered) > len(kids):
        inner += ", …" if inner else "…"
    node["repr"] = clip(f"{cls.__name__}({inner})", builder.options.max_repr)
    return node


def _instance_dict(obj: Any) -> dict | None:
    for klass in type(obj).__mro__:
        descr = klass.__dict__.get("__dict__")
        if descr is not None:
            try:
                value = descr.__get__(obj, type(obj))
            except (AttributeError, TypeError):
                return None
            return value if type(value) is dict else None
    return None


def _slot_value(obj: Any, name: str) -> Any:
    for klass in type(obj).__mro__:
        descr = klass.__dict__.get(name)
        if type(descr).__name__ == "member_descriptor":
            try:
                return descr.__get__(obj, type(obj))
            except AttributeError:
                return None
    return None
