"""The repo map's ranking: which definitions matter most for a focus.

The file graph: file r links to file d when r refers to an identifier d defines. A reference
to a name with k definers gives each of them sqrt(occurrences) / k (a name with a leading
underscore: a tenth of that); names with more than MAX_DEFINERS definers (`get`, `__init__`)
say nothing of where to look and are left out. A file's out-edges (its row) depend on its own
references and on who defines those names, so a change re-derives the row of that file and,
when its definitions changed, the rows of the files that refer to those names; every other
row is kept as it is and the new rows are spliced in. A row's weights are summed in one fixed
order and rounded to 9 decimals, whether it is derived alone or with all the others: a graph
updated in place is the graph a new process builds, bit for bit.

Ranking is personalized PageRank over that graph (damping 0.85): the focus files, the files
defining a focus identifier and, for a task's text alone, its best lexical hits share the
restart mass (with a small uniform floor); solved exactly (core.repomap.solve). The file rank
(core.repomap.fusion) fuses BM25, what files say (a text's compounds and whole tokens too),
the file name's words, the graph's edges to and from the focus and the commits of the history
that changed a file with the focus; PageRank breaks its ties (and is the rank for a focus of
identifiers alone). The map's definitions follow the file rank: a focus identifier's first,
then each best PER_FILE of each file, files in rank order, then the rest; within a file a
definition weighs the rank that flows to its name along references; ties fall to position
(path, line, name key). Scores are rounded to RANK_DECIMALS before sorting. Tags are packed."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tokend.core.repomap import edges as graph_rows
from tokend.core.repomap import fusion as fusions
from tokend.core.repomap import name_words
from tokend.core.repomap import rank as signals_of
from tokend.core.repomap.choice import RANK_DECIMALS, chosen_definitions
from tokend.core.repomap.cochange import History, cochange
from tokend.core.repomap.edges import Edges, referrers, renumbered, replaced, same_row
from tokend.core.repomap.links import ImportLinks
from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.rank import Signals
from tokend.core.repomap.rank import identifiers_in as identifiers_in
from tokend.core.repomap.render import RankedDefinition
from tokend.core.repomap.restart import FOCUS_WEIGHT as FOCUS_WEIGHT
from tokend.core.repomap.restart import restart_of
from tokend.core.repomap.said import query_ids, said_signals
from tokend.core.repomap.solve import Product, no_product, solver
from tokend.core.repomap.stem import stem as stem_of
from tokend.core.repomap.store import TagTable, name_key
from tokend.core.repomap.tags import FileTags
from tokend.core.repomap.vendored import demoted
from tokend.core.repomap.whole import said_apply, whole_changed, whole_scores
from tokend.core.repomap.words import WordTable, said

TRACK_MAX_FILES = 256  # larger batches re-sort the definers and re-derive every row

Array = Any


@dataclass(frozen=True, slots=True)
class Focus:
    """What the next request is about: files (workspace-relative paths), identifiers, and the
    task's text (its words weigh files by BM25)."""

    files: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    text: str = ""


@dataclass(slots=True)
class _Ranking:  # what every rank of one graph version shares
    solve: Callable[[Array], Array]


@dataclass(slots=True)
class RepoGraph:
    """Tags of every source file and the weighted file graph derived from them."""

    table: TagTable = field(default_factory=TagTable)
    words: WordTable = field(default_factory=WordTable)  # what each file says (its rows)
    whole: WordTable = field(default_factory=WordTable)  # its whole tokens (core.repomap.whole)
    version: int = 0  # moves at every change but of what files say alone (set_words)
    words_version: int = 0  # moves at every change of what files say
    graph_version: int = 0  # moves when the names, references or imports change
    _edges: Edges | None = None  # None: every row is to be derived
    _stale: set[str] = field(default_factory=set)  # paths whose rows are to be derived again
    _ranking: tuple[int, _Ranking] | None = None
    signals: Signals = field(default_factory=Signals)
    links: ImportLinks = field(default_factory=ImportLinks)
    _path_terms: tuple[list[str], signals_of.PathTerms] | None = None
    _doc_lengths: tuple[tuple[int, int], tuple[Array, Array]] | None = None
    product: Product = no_product  # a large graph's compiled product (core.repomap.solve)
    history: History = field(default_factory=History)  # the repository's (core.repomap.cochange)

    def set_files(
        self,
        changed: Mapping[str, FileTags | None],
        given: Mapping[str, PackedTags] = {},
        unsaid: Collection[str] = (),
    ) -> bool:
        """Replace (None: remove) the tags of some files; True when anything changed (what a
        file says alone changes `version`, not `graph_version`: no row is derived again).
        `given`: some files' tags packed already (by the tag workers; their `changed` tags may
        then lack the definitions and references). `unsaid`: files whose words are not counted
        yet: they say nothing until `set_words` gives their words."""
        packed: dict[str, PackedTags | None] = {}
        for path, tags in changed.items():
            new = None if tags is None else given.get(path) or PackedTags.of(tags)
            row = self.table.row(path)
            if new is None and row is None:
                continue
            if new is not None and row is not None and same_row(self.table, row, new):
                if tags is None or self.links.same(path, tags.imports):
                    continue
            packed[path] = new
        spoken = {p: {} if p in unsaid else said(t) for p, t in changed.items() if t is not None}
        at = {p: self.table.row(p) for p in spoken}
        changes = whole_changed(self.words, self.whole, at, spoken, len(self.paths))
        if not packed and not any(changes):
            return False
        remap = self._apply(packed, changed) if packed else None
        said_apply(self.words, self.whole, changes, self.table.row, remap, len(self.paths))
        self.version += 1
        return True

    def set_words(self, spoken: Mapping[str, Mapping[int, int]], more: int = 0,
                  names: Mapping[str, name_words.Words] = {}) -> bool:  # fmt: skip
        """What some files of the graph say (core.repomap.words.said of their tags) and their
        names' words (`names`, the words' pass's: core.repomap.name_words), tags unchanged:
        `words_version` moves, not `version` (a map reading no words is the same); `more`: how
        many files' words are still to come (the first build's word pass)."""
        at = {p: r for p in spoken if (r := self.table.row(p)) is not None}
        changes = whole_changed(self.words, self.whole, at, spoken, len(self.paths))
        named = name_words.changed_rows(self.table, names)
        if not any(changes) and not named:
            return False
        # Room for the words still to come (issue 22: the first build's come a chunk at a time, each
        # grew the columns into a new copy, 59 MiB at the end on the kernel; unwritten: not resident)
        self.table.set_words(named, more * name_words.ROOM)
        said_apply(self.words, self.whole, changes, at.get, None, len(self.paths), more)
        self.words_version += 1
        return True

    def _apply(self, packed: Mapping[str, PackedTags | None], changed: Mapping[str, Any]) -> Array:
        """The table and the graph's rows after `packed`; which old row went where."""
        before, track = self.table.paths, self._edges is not None and len(packed) <= TRACK_MAX_FILES
        applied = self.table.apply(packed, track=track)
        imports = {p: (t.imports if (t := changed[p]) is not None else None) for p in packed}
        also = self.links.changed(imports, before, self.table.paths)
        if track and self._edges is not None:
            self._edges = renumbered(self._edges, applied.remap, len(self.table.paths))
            stale = set(applied.rows) | set(referrers(self.table, applied.names).tolist())
            self._stale.update({self.table.paths[r] for r in stale} | also)
        else:
            self._edges, self._stale = None, set()
        self.graph_version += 1
        return applied.remap

    @property
    def paths(self) -> list[str]:
        return self.table.paths

    def defines(self, name: str) -> bool:
        return len(self.table.definer_rows(name_key(name))) > 0

    def edges(self, each: graph_rows.Each = map) -> Edges:
        """This version's rows: kept ones as they are, stale ones derived again."""
        n = len(self.table.paths)
        if self._edges is None:
            rows = np.arange(n, dtype=np.int64)
            self._edges = graph_rows.derive_rows(self.table, rows, self._links(rows), each)
        elif self._stale:  # (int64 rows: none where the stale files are all gone)
            found = [r for p in self._stale if (r := self.table.row(p)) is not None]
            rows = np.array(sorted(found), dtype=np.int64)
            fresh = graph_rows.derive_rows(self.table, rows, self._links(rows))
            self._edges = replaced(self._edges, rows, fresh)
        self._stale = set()
        return self._edges

    def _links(self, rows: Array) -> graph_rows.Links:
        on = self.signals
        return self.links.links(self.table.paths, rows, reach=on.graph and on.resolve,
                                imports=on.graph and on.imports, specific=on.specific)  # fmt: skip

    def set_history(self, history: History) -> None:
        """The repository's history from now on (`version` moves: a map may rank otherwise)."""
        self.history, self.version = history, self.version + 1

    def use(self, signals: Signals) -> None:
        """Rank with these signals from now on (the rows are derived again)."""
        self.signals, self._edges, self._ranking, self._stale = signals, None, None, set()

    def prepare(self, each: graph_rows.Each = map) -> None:
        """Derive this version's rows, solver and the table's group columns now (deriving the
        rows found them: the keys they hold are let go), else the next rank does."""
        if self.table.paths:
            self._prepared(each)  # (`each`: derive_rows's)
            self.table.groups()

    def rank_files(self, focus: Focus) -> list[tuple[str, float]]:
        """Every file but the focus files, most relevant first, with its score."""
        if not self.table.paths:
            return []
        graph_rank, score = self._scored(focus)
        order = self._file_order(focus, score, graph_rank)
        return [(self.table.paths[r], float(score[r])) for r in order]

    def _file_order(self, focus: Focus, score: Array, graph_rank: Array) -> Array:
        """By fused score; ties (the files no signal speaks for among them) by the graph's
        rank, then by row."""
        ties = np.round(graph_rank, RANK_DECIMALS) if self.signals.graph else np.zeros(len(score))
        order = np.lexsort((np.arange(len(score)), -ties, -score))
        return order[~np.isin(order, self._focus_rows(focus))]

    def _scored(self, focus: Focus) -> tuple[Array, Array]:
        """The graph's rank and the fused file scores (core.repomap.rank), rounded. A text
        focus without files: its best lexical hits personalize the graph's rank."""
        t, on = self.table, self.signals
        focus_rows = sorted(self._focus_rows(focus))
        text_only = bool(focus.text) and not focus_rows
        scores: dict[str, Array] = {}
        if on.lexical:
            scores["lexical"] = self._lexical(focus_rows, focus.text, text_only)
        on_text = text_only and on.seed and "lexical" in scores
        seeds = signals_of.seeds(scores["lexical"], signals_of.SEEDS) if on_text else {}
        graph_rank = self._pagerank(self._prepared(), focus, seeds)
        if on.graph:
            scores["graph"] = np.round(graph_rank, RANK_DECIMALS)  # ties as in any process
        fusion = fusions.fusion_for(bool(focus_rows), bool(focus.text))
        if on.folder and fusion.uses("folder"):  # one neither weighed nor scaled adds nothing
            scores["folder"] = signals_of.folder(self._paths_terms(), focus_rows)
        scores.update(said_signals(self.words, len(t.paths), on, fusion, focus_rows, focus.text))
        if on.whole and text_only and fusion.uses("whole"):  # a text's tokens, whole
            scores["whole"] = whole_scores(self.whole, len(t.paths), focus.text)
        if on.stem and focus_rows and fusion.uses("stem"):
            scores["stem"] = stem_of(*self._paths_terms().names, focus_rows)
        if on.cochange and focus_rows and fusion.uses("cochange"):
            scores["cochange"] = cochange(self.history, t.row, len(t.paths), focus.files)
        if on.near:
            e, around = self.edges(), dict.fromkeys(focus_rows, 1.0) if focus_rows else seeds
            near = signals_of.near(e.offsets, e.targets, e.weights, around)
            scores["near"] = np.round(near, RANK_DECIMALS)
        fused = fusions.fused(scores, len(t.paths), fusion)
        fused = demoted(fused, lambda: self._paths_terms().vendored, focus_rows, focus.text)
        return graph_rank, np.round(fused, RANK_DECIMALS)

    def _lexical(self, rows: list[int], text: str, text_only: bool) -> Array:
        """BM25 of the focus (core.repomap.rank.lexical); a text is read against what files say
        too, and so is what the focus files say (their words count in their lengths then)."""
        words = self.words
        ids = query_ids(words, self.signals, rows, text)
        query = signals_of.query(self.table, rows, text)
        if not len(query) and ids is None:  # no focus: 0 each, no paths' terms made (issue 22)
            return np.zeros(len(self.table.paths))
        version = (self.version, self.words_version)
        if self._doc_lengths is None or self._doc_lengths[0] != version:
            lengths = signals_of.lengths(self.table, self._paths_terms(), words.lengths())
            self._doc_lengths = (version, lengths)
        length = self._doc_lengths[1][0 if ids is not None and (text_only or not text) else 1]
        spoken = (words, ids) if ids is not None else None
        return signals_of.lexical(self.table, self._paths_terms(), query, length, spoken)

    def _paths_terms(self) -> signals_of.PathTerms:
        if self._path_terms is None or self._path_terms[0] != self.table.paths:
            self._path_terms = (self.table.paths, signals_of.path_terms(self.table.paths))
        return self._path_terms[1]

    def rank(self, focus: Focus, limit: int | None = None) -> list[RankedDefinition]:
        """The definitions outside the focus files, most relevant first (the first `limit`)."""
        return self.rank_with_scores(focus, limit)[0]

    def rank_with_scores(
        self, focus: Focus, limit: int | None = None
    ) -> tuple[list[RankedDefinition], dict[str, float]]:
        """`rank`, and the file score of each file the definitions are in."""
        if not self.table.paths:
            return [], {}
        t, (graph_rank, score) = self.table, self._scored(focus)
        order, focus_rows = self._file_order(focus, score, graph_rank), self._focus_rows(focus)
        files, lines = chosen_definitions(t, self.edges(), graph_rank, order, focus.identifiers,
                                          focus_rows, limit)  # fmt: skip
        scores = {t.paths[f]: float(score[f]) for f in set(files)}
        ranked = [RankedDefinition(t.paths[f], li) for f, li in zip(files, lines, strict=True)]
        return ranked, scores

    def _focus_rows(self, focus: Focus) -> list[int]:
        return [r for p in focus.files if (r := self.table.row(p)) is not None]

    def _pagerank(self, c: _Ranking, focus: Focus, seeds: Mapping[int, float]) -> Array:
        y = c.solve(restart_of(self.table, self._focus_rows(focus), focus.identifiers, seeds))
        return np.asarray(y / y.sum())

    def _prepared(self, each: graph_rows.Each = map) -> _Ranking:
        if self._ranking is not None and self._ranking[0] == self.graph_version:
            return self._ranking[1]
        self._ranking = None  # the old version's arrays go before the new ones are made
        e, n = self.edges(each), len(self.table.paths)
        ranking = _Ranking(solver(e.offsets, e.targets, e.weights, n, self.product))
        self._ranking = (self.graph_version, ranking)
        return ranking
