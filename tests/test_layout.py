"""The layout rule of docs/architecture.md: a lower room never imports a higher one.

Every ``import`` of every module of the package is read with ``ast`` (imports inside functions
included: a lazy import is still a dependency) and resolved to the room it lands in. The order
(the one-way flow raw corpus -> corpora/ -> data-bin -> data/ -> models/ -> scoring/ / analysis/
-> tables and plots, with the building blocks below and the console scripts on top):

    0  errors.py, fairseq_fixes/, checkpoint_io.py, checkpoint_safety.py, checkpoint_mismatch.py, checkpoint_average.py,
       multi_tensor.py, multi_tensor_adam.py, choices.py, helpdoc.py (package root)
    1  modules/
    2  data/
    3  corpora/
    4  models/, tasks/, criterions/, hub.py
    5  scoring/, grammar/
    6  analysis/
    7  fairseq_tpr/__init__.py (imports everything that registers)
    8  cli/

A module may import its own level and the levels below. ``import fairseq_tpr`` (the package,
for its registrations) is allowed anywhere: Python has imported it already as the parent of any
submodule, so it adds no dependency.
"""
import ast
import re
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "fairseq_tpr"
LEVELS = {
    "errors": 0, "fairseq_fixes": 0, "checkpoint_io": 0, "checkpoint_safety": 0, "checkpoint_mismatch": 0,
    "checkpoint_average": 0,
    "multi_tensor": 0, "multi_tensor_adam": 0, "choices": 0, "helpdoc": 0,
    "modules": 1,
    "data": 2,
    "corpora": 3,
    "models": 4, "tasks": 4, "criterions": 4, "hub": 4,
    "scoring": 5, "grammar": 5,
    "analysis": 6,
    "__init__": 7,
    "cli": 8,
}
NOT_CODE = {"config"}  # package data (Hydra YAML), no Python


def _module_name(path):
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name):
    """Whether ``fairseq_tpr.a.b`` is a module or package of this checkout."""
    rel = Path(*name.split("."))
    return (REPO / rel.with_suffix(".py")).is_file() or (REPO / rel / "__init__.py").is_file()


def _room(name):
    """``fairseq_tpr.models.atpl`` -> ``models``; ``fairseq_tpr.errors`` -> ``errors``; the package -> ``__init__``."""
    parts = name.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _imports(path):
    """``[(line, imported module name)]`` of the fairseq_tpr modules that ``path`` imports."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "fairseq_tpr"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "fairseq_tpr":
                continue
            subs = [f"{module}.{a.name}" for a in node.names if _is_module(f"{module}.{a.name}")]
            out += [(node.lineno, m) for m in subs] or [(node.lineno, module)]
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_in_a_room():
    rooms = {_room(_module_name(p)) for p in MODULES}
    assert not rooms - set(LEVELS), (f"modules outside the rooms of docs/architecture.md: {sorted(rooms - set(LEVELS))}; "
                                     "put them in a room, or add the room here and to docs/architecture.md")
    subpackages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert subpackages - NOT_CODE <= set(LEVELS)


def test_the_rooms_are_documented():
    doc = (REPO / "docs/architecture.md").read_text(encoding="utf-8")
    for room in LEVELS:
        if room != "__init__":
            assert f"`{room}/`" in doc or f"`{room}.py`" in doc, f"{room} is not described in docs/architecture.md"


def _violations():
    found = []
    for path in MODULES:
        name = _module_name(path)
        level = LEVELS[_room(name)]
        for line, target in _imports(path):
            if target == "fairseq_tpr":
                continue  # the package itself: registration, imported before any submodule anyway
            if LEVELS[_room(target)] > level:
                found.append(f"{path.relative_to(REPO)}:{line}: {_room(name)} (level {level}) imports {target} "
                             f"({_room(target)}, level {LEVELS[_room(target)]})")
    return found


def test_the_rule_resolves_relative_and_submodule_imports():
    # fairseq_tpr/__init__.py: "from .errors import install_excepthook", "from .models import (atpl, ...)"
    names = {m for _, m in _imports(PACKAGE / "__init__.py")}
    assert {"fairseq_tpr.errors", "fairseq_tpr.criterions.extractive_bce", "fairseq_tpr.models.atpl"} <= names
    assert "fairseq_tpr.errors.install_excepthook" not in names and "fairseq_tpr.models" not in names
    assert _room("fairseq_tpr.models.atpl") == "models" and _room("fairseq_tpr.hub") == "hub"
    assert _room("fairseq_tpr") == "__init__"


def test_no_room_imports_a_higher_one():
    found = _violations()
    assert not found, "lower rooms importing higher ones (docs/architecture.md):\n" + "\n".join(found)


def _graph():
    """``{module: {modules it imports}}`` over the package's modules (imports inside functions
    included; ``import fairseq_tpr``, the package itself, left out as above). A package's
    ``__init__`` is the package's own name."""
    graph = {}
    for path in MODULES:
        name = _module_name(path)
        graph.setdefault(name, set()).update(t for _, t in _imports(path) if t != "fairseq_tpr" and t != name)
    return graph


def _cycles(graph):
    """Every import circle as a list of modules (one per strongly connected component of more than
    one module, Tarjan's algorithm), sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_inside_the_package():
    cycles = _cycles(_graph())
    assert not cycles, "import circles (each room must import one way):\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_console_scripts_stay_thin():
    """docs/architecture.md: a console script is argument parsing and a call into the library,
    under 200 lines; and no module keeps an error class of its own (errors.py has them all)."""
    long = [f"{p.relative_to(REPO)}: {n} lines" for p in sorted((PACKAGE / "cli").glob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) >= 200]
    assert not long, "console scripts of 200 lines or more:\n" + "\n".join(long)
    for path in MODULES:
        if path.name == "errors.py" or path.name == "math_dataset.py":  # math_dataset: its stand-ins when run by path
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                assert not bases & {"ValueError", "RuntimeError", "FairseqTprError"}, (
                    f"{path.relative_to(REPO)}: error class {node.name}: raise one of fairseq_tpr.errors' classes")


FIXES_DIR = PACKAGE / "fairseq_fixes"
ADDED_NOT_REPLACED = {("decoding.py", "_no_repeat_ngram_fairseq")}  # a new name on a fairseq class, not a patch


def _fairseq_assignments(path):
    """``[(line, target)]``: ``setattr`` calls and assignments to an attribute of a name that ``path``
    imports from fairseq (a fairseq module or class), anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fairseq_names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("fairseq", "fairseq_cli"):
            fairseq_names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            fairseq_names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("fairseq.")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr":
            found.append((node.lineno, "setattr(...)"))
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and getattr(target.value, "id", None) in fairseq_names:
                if (path.name, target.attr) not in ADDED_NOT_REPLACED:
                    found.append((node.lineno, f"{target.value.id}.{target.attr} = ..."))
    return found


def test_fairseq_is_patched_only_through_the_patch_helper():
    """fairseq_fixes/: every replacement of something of fairseq's goes through ``patching.patch`` (which
    installs it once and keeps the original), never a bare assignment or ``setattr``."""
    bad = [f"{p.relative_to(REPO)}:{line}: {what}" for p in sorted(FIXES_DIR.glob("*.py")) if p.name != "patching.py"
           for line, what in _fairseq_assignments(p)]
    assert not bad, "patch fairseq with fairseq_fixes.patching.patch:\n" + "\n".join(bad)


def test_the_patch_rule_finds_a_bare_assignment(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text("from fairseq import utils\n\ndef fix():\n    utils.softmax = lambda x: x\n    setattr(utils, 'a', 1)\n")
    assert [line for line, _ in _fairseq_assignments(bad)] == [4, 5]


def test_every_command_is_listed_in_one_place():
    """docs/architecture.md "Commands" lists every console script of pyproject.toml and every module
    outside cli/ that runs as ``python -m`` (a ``__main__`` block), and nothing that does not exist."""
    import tomllib

    doc = (REPO / "docs/architecture.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Commands"):doc.index("\n## ", doc.index("## Commands") + 1)]
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    listed_scripts = dict(re.findall(r"^\| `(fairseq-tpr-[\w-]+)` \| `([\w.]+)` \|", section, re.M))
    assert listed_scripts == {name: target.split(":")[0] for name, target in scripts.items()}
    runnable = sorted(".".join(p.relative_to(REPO).with_suffix("").parts) for p in PACKAGE.rglob("*.py")
                      if p.parent.name != "cli" and 'if __name__ == "__main__"' in p.read_text(encoding="utf-8"))
    assert sorted(re.findall(r"^\| `python -m ([\w.]+)` \|", section, re.M)) == runnable


def test_every_command_builds_its_parser_one_way():
    """docs/architecture.md, "One way to build a command's parser": build_parser() with helpdoc.doc_parser,
    in every cli/ module, and no ArgumentParser made by hand there."""
    bad = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        if path.name == "__init__.py":
            continue
        text = path.read_text(encoding="utf-8")
        if not re.search(r"^def build_parser\(\):", text, re.M) or "doc_parser(" not in text:
            bad.append(f"{path.name}: no build_parser() made with doc_parser")
        if "ArgumentParser(" in text:
            bad.append(f"{path.name}: an ArgumentParser made by hand")
    assert not bad, bad


def _model_files():
    """The modules of models/ that register a model (``@register_model``)."""
    return sorted(p for p in (PACKAGE / "models").glob("*.py") if "@register_model(" in p.read_text(encoding="utf-8"))


def test_no_model_file_imports_another():
    """docs/architecture.md: what two models share lives in a shared module of models/ (role_options.py,
    continuous_roles.py, tpr_transformer_base.py, ...), never in one model's file that another imports."""
    models = {_module_name(p) for p in _model_files()}
    assert len(models) >= 7
    bad = [f"{p.relative_to(REPO)}:{line} imports {target}" for p in _model_files()
           for line, target in _imports(p) if target in models and target != _module_name(p)]
    assert not bad, "model files importing each other; move the shared piece to a shared module:\n" + "\n".join(bad)


REGISTERS = re.compile(r"^@register_(model|model_architecture|task|criterion|scorer)\(", re.M)


def test_register_is_the_one_list_of_registering_modules():
    """docs/architecture.md: ``fairseq_tpr.register()`` imports every module that registers something with
    fairseq (a ``@register_*`` decorator), and no package ``__init__`` imports one (``models/__init__`` and
    ``tasks/__init__`` only call register(), fairseq's hooks into a user dir)."""
    registering = {_module_name(p) for p in MODULES if REGISTERS.search(p.read_text(encoding="utf-8"))}
    assert len(registering) >= 15
    listed = {m for _, m in _imports(PACKAGE / "__init__.py")}
    assert registering <= listed, f"not imported by register(): {sorted(registering - listed)}"
    others = [f"{p.relative_to(REPO)} imports {m}" for p in sorted(PACKAGE.rglob("__init__.py")) if p.parent != PACKAGE
              for _, m in _imports(p) if m in registering]
    assert not others, others
