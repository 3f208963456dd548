"""Which cells grading may leave out: a static reading of each cell's names (ast, symtable).

A cell tagged `measurement`, `demo` or `explorer` is not run while grading unless a later cell
that does run may read a name it binds; a cell that could read anything (magics, eval, globals())
keeps every earlier cell running. coursekit.judge.execute asks `skipped_cells`.
"""
from __future__ import annotations

import ast

# Names through which a cell can reach any global (so it may read whatever a skipped cell set).
REACH_ALL = frozenset({"globals", "vars", "locals", "eval", "exec", "compile", "get_ipython", "__builtins__",
                       "__import__", "__main__", "sys", "builtins", "importlib", "inspect"})


def _binds(node) -> set[str] | None:
    """The names a statement may bind, at any depth (None: a star import, which binds unknown names)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            for alias in sub.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            names.update(sub.names)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            names.add(sub.rest)
    return names


def _python(source: str) -> ast.Module | None:
    """A cell as Python: IPython's own rewriting of its magics, with what %time and %%time time
    put back in their place (they run it in the notebook's namespace); any other magic stays a
    get_ipython() call. None: not Python even then."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ImportError, ValueError):
        return None
    body = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("run_line_magic", "run_cell_magic") and isinstance(call.func.value, ast.Call)
                and isinstance(call.func.value.func, ast.Name) and call.func.value.func.id == "get_ipython"
                and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
                and call.args and call.args[0].value == "time"):
            try:
                body += ast.parse(call.args[-1].value).body
                continue
            except SyntaxError:
                return None
        body.append(statement)
    tree.body = body
    return tree


def cell_binds(source: str) -> set[str] | None:
    """Every name a cell's code may bind (None: not Python, or a star import)."""
    tree = _python(source)
    return None if tree is None else _binds(tree)


def _scoped_reads(node) -> set[str]:
    """The global names the functions, lambdas, classes and comprehensions inside `node` read
    (Python's own scope analysis, symtable): a parameter or a local is not a read."""
    import symtable

    reads, tables = set(), symtable.symtable(ast.unparse(node), "<cell>", "exec").get_children()
    while tables:
        table = tables.pop()
        reads |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global()}
        tables.extend(table.get_children())
    return reads


def _flow_reads(statements, bound: set[str], reads: set[str]) -> set[str]:
    """Walk module-level statements in order: add to `reads` each name loaded before this code
    has surely bound it; return the names surely bound afterwards. A loop's body may not run and
    only one branch of an if does, so what they bind counts only inside them (or in both branches)."""
    def loads(*nodes):
        for node in nodes:
            if node is None:
                continue
            outer = set()
            stack = [node]
            while stack:  # the names this scope loads, not descending into nested scopes
                sub = stack.pop()
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                    outer.add(sub.id)
                if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                                        ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) or sub is node:
                    stack.extend(ast.iter_child_nodes(sub))
                else:
                    outer |= _loads_outside_scope(sub)
            reads.update(outer - bound)
            reads.update(_scoped_reads(node) - bound)

    for st in statements:
        if isinstance(st, (ast.For, ast.AsyncFor)):
            loads(st.iter)
            inner = set(bound) | (_binds(st.target) or set())
            _flow_reads(st.body, inner, reads)
            _flow_reads(st.orelse, set(bound), reads)
        elif isinstance(st, ast.While):
            loads(st.test)
            _flow_reads(st.body, set(bound), reads)
            _flow_reads(st.orelse, set(bound), reads)
        elif isinstance(st, ast.If):
            loads(st.test)
            bound |= _flow_reads(st.body, set(bound), reads) & _flow_reads(st.orelse, set(bound), reads)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            loads(*[item.context_expr for item in st.items])
            for item in st.items:
                if item.optional_vars is not None:
                    bound |= _binds(item.optional_vars) or set()
            bound |= _flow_reads(st.body, set(bound), reads)
        elif isinstance(st, ast.Try):
            _flow_reads(st.body, set(bound), reads)
            for handler in st.handlers:
                loads(handler.type)
                _flow_reads(handler.body, set(bound) | ({handler.name} if handler.name else set()), reads)
            _flow_reads(st.orelse, set(bound), reads)
            _flow_reads(st.finalbody, set(bound), reads)
        else:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                loads(*st.decorator_list, *getattr(st, "bases", []), *getattr(st, "keywords", []))
                if not isinstance(st, ast.ClassDef):
                    loads(*st.args.defaults, *[d for d in st.args.kw_defaults if d is not None])
                reads.update(_scoped_reads(st) - bound)
            else:
                loads(st)
            bound |= _binds(st) or set()
    return bound


def _loads_outside_scope(node) -> set[str]:
    """What a nested scope's header evaluates in the enclosing scope: a comprehension's first
    iterable, a function's defaults and decorators, a class's bases."""
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        first = node.generators[0].iter
        return {n.id for n in ast.walk(first) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    parts = list(getattr(node, "decorator_list", [])) + list(getattr(node, "bases", []))
    args = getattr(node, "args", None)
    if isinstance(args, ast.arguments):
        parts += list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    return {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def cell_reads(source: str) -> set[str] | None:
    """The names a cell may read from what earlier cells left: each name it loads before its own
    code has surely bound it, in order (a loop's target inside the loop, an assignment below
    it), and the globals its functions, lambdas and comprehensions read (symtable; a function's
    globals count where it is defined). None (it may read anything): not plain Python (magics,
    a syntax error), or it names a way to reach every global (globals(), eval, sys, ...)."""
    tree = _python(source)
    if tree is None or {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & REACH_ALL:
        return None
    reads: set[str] = set()
    _flow_reads(tree.body, set(), reads)
    return reads


def skipped_cells(cells, skip_tags, run_all: bool = False) -> set[int]:
    """Indices of the code cells not run while grading: tagged with one of `skip_tags`, neither
    graded nor a solution, plain Python, and no cell that does run after it may read a name it
    binds (cell_reads: a learner's cell that uses a plot's variable makes that plot run). Decided
    from the last cell back, so a skipped cell's own reads keep nothing running."""
    skip: set[int] = set()
    if run_all:
        return skip
    later: set[str] = set()
    reads_anything = False
    for index in range(len(cells) - 1, -1, -1):
        cell = cells[index]
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if not (meta.get("grade") or meta.get("solution")) and set(cell.metadata.get("tags", [])) & set(skip_tags):
            names = cell_binds(cell.source)
            if names is not None and not reads_anything and not names & later:
                skip.add(index)
                continue
        reads = cell_reads(cell.source)
        if reads is None:
            reads_anything = True
        else:
            later |= reads
    return skip

