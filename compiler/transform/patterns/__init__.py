"""BYOC pattern tables written as Relay text, and matching them (docs/byoc.md).

    table = load_pattern_table(text, "table.relay")   # entries in priority order + diagnostics
    match(table.entries[0], expr)                      # a Match, or None
    partition(entry, body, composite_name)             # MergeComposite's rewrite for one pattern

The passes that use them (MergeComposite, AnnotateTarget, MergeCompilerRegions,
PartitionGraph) read their options from the PassContext config (options.py).
"""

from .matcher import Match, explain, match
from .options import ByocOptions, byoc_options
from .partition import partition
from .table import PatternEntry, PatternTable, load_pattern_table

__all__ = ["Match", "explain", "match", "partition", "PatternEntry", "PatternTable", "load_pattern_table",
           "ByocOptions", "byoc_options"]
