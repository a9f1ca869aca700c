"""The type stubs (python/tensorgraph/_tensorgraph/**/*.pyi, scripts/gen-python-stubs.sh) name every
public function and class of the extension module; every public function has a docstring."""
import ast
import pathlib

import tensorgraph as tg

STUBS = pathlib.Path(__file__).resolve().parents[1] / "tensorgraph" / "_tensorgraph"


def stub_names(path):
    tree = ast.parse(path.read_text())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
        t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target] if isinstance(t, ast.Name)}


def public(module):
    return {n for n in dir(module) if not n.startswith("_") and (callable(getattr(module, n)))
            and not isinstance(getattr(module, n), type(tg))}


def test_stubs_cover_the_module():
    for module, stub in [(tg._C, STUBS / "__init__.pyi"), (tg._C.nn, STUBS / "nn" / "__init__.pyi"),
                         (tg._C.nn.zoo, STUBS / "nn" / "zoo.pyi"), (tg._C.nn.data, STUBS / "nn" / "data.pyi"),
                         (tg._C.onnx, STUBS / "onnx.pyi")]:
        missing = sorted(public(module) - stub_names(stub) - {"Error"})
        assert missing == [], f"{stub.name}: regenerate with scripts/gen-python-stubs.sh"


def test_functions_have_docstrings():
    undocumented = []
    for module in (tg._C, tg._C.nn, tg._C.nn.zoo, tg._C.nn.data, tg._C.onnx):
        for n in public(module):
            doc = getattr(module, n).__doc__ or ""
            # pybind11 puts the signature on the first line; the text follows a blank line
            if "\n\n" not in doc.strip() and not isinstance(getattr(module, n), type):
                undocumented.append(f"{module.__name__}.{n}")
    assert undocumented == []
