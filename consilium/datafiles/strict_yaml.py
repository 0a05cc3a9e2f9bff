"""A strict YAML loader: safe tags only, nesting bounded while composing, and the node graph measured
before any value is built, so YAML aliases cannot expand a small file past :data:`MAX_VALUES` values or
:data:`MAX_TEXT_CHARS` characters, and a duplicate key is refused with both its lines.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from consilium.datafiles.values import (
    MAX_DEPTH,
    MAX_TEXT_CHARS,
    MAX_VALUES,
    DataError,
    huge_int,
    join_path,
    short_path,
    too_deep,
)

__all__ = ["StrictLoader"]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictLoader(yaml.SafeLoader):
    """Safe loader that bounds depth while composing and measures the node graph before building values.

    Composing never expands an alias (an alias is the same node again), so measuring each node once
    gives the expanded size of even a "billion laughs" document in microseconds, before it can cost
    memory.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._measured: dict[int, tuple[int, int, int]] = {}
        self._active: set[int] = set()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # The composer recurses once per level; stop long before Python's stack does.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
                raise DataError("", f"{too_deep()} (line {line})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: ScalarNode) -> Any:
        """An integer too long to convert is kept as text for :func:`~consilium.datafiles.values.check_value`
        to refuse at its path (``int`` of it would raise without one)."""
        return huge_int(str(node.value)) or super().construct_yaml_int(node)  # type: ignore[no-untyped-call]

    def measure(self, node: Node, path: str, depth: int) -> tuple[int, int, int]:
        """(values, characters, height) of ``node`` as if its aliases were copies; raises on a limit."""
        if depth > MAX_DEPTH:
            raise DataError(short_path(path), too_deep())
        key = id(node)
        size = self._measured.get(key)
        if size is None:
            if key in self._active:
                raise DataError(path, "a YAML alias refers to the value that contains it")
            self._active.add(key)
            size = self._measure_children(node, path, depth)
            self._active.discard(key)
            self._measured[key] = size
        if depth + size[2] - 1 > MAX_DEPTH:
            raise DataError(short_path(path), f"{too_deep()} (once its YAML aliases are expanded)")
        return size

    def _measure_children(self, node: Node, path: str, depth: int) -> tuple[int, int, int]:
        if isinstance(node, ScalarNode):
            return 1, len(node.value), 1
        values, chars, height = 1, 0, 1
        for child_path, child in self._children(node, path):
            child_values, child_chars, child_height = self.measure(child, child_path, depth + 1)
            values += child_values
            chars += child_chars
            height = max(height, child_height + 1)
            if values > MAX_VALUES:
                raise DataError("", f"YAML aliases expand this file to more than {MAX_VALUES:,} values; "
                                    "write the repeated part out or drop the aliases")
            if chars > MAX_TEXT_CHARS:
                raise DataError("", f"YAML aliases expand this file to more than {MAX_TEXT_CHARS:,} characters; "
                                    "write the repeated part out or drop the aliases")
        return values, chars, height

    def _children(self, node: Node, path: str) -> list[tuple[str, Node]]:
        if isinstance(node, SequenceNode):
            return [(join_path(path, index), item) for index, item in enumerate(node.value)]
        if not isinstance(node, MappingNode):
            return []
        children: list[tuple[str, Node]] = []
        lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            children.append((path, key_node))
            if key_node.tag == _MERGE_TAG:  # `<<: *base` may be overridden by the keys beside it
                children.append((path, value_node))
                continue
            key = self.construct_object(key_node, deep=True) if isinstance(key_node, ScalarNode) else key_node
            line = key_node.start_mark.line + 1
            first = lines.get(key)  # a scalar key is hashable; a collection key stands as its node
            lines.setdefault(key, line)
            if first is not None:
                raise DataError(join_path(path, key), f"duplicate key (set at lines {first} and {line})")
            children.append((join_path(path, key), value_node))
        return children


# The constructors are looked up by tag in a table filled when SafeLoader was defined; register the override.
StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
