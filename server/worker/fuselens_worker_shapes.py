"""Example inputs from shape annotations on the function's parameters (read from its source).

Two spellings (docs/server.md):
  - jaxtyping:      def f(x: Float[Tensor, "8 16"], idx: Int[Tensor, "8"]): ...
  - a comment:      def f(x: torch.Tensor,  # shape: (8, 16)
                          y: torch.Tensor,  # shape: (16,) float64
                     ): ...
    or, for several parameters on one line:  `# shape: x=(8, 16), y=(16,)`
Dimensions are integers or names; every name gets DEFAULT_DIM (the same name, the same size), a
variadic `*batch` / `...` gets no dimensions. Parameters with a default value may go unannotated.
"""
import ast
import re

DEFAULT_DIM = 8
JAX_DTYPES = {
    "Float": "float32", "Float32": "float32", "Float64": "float64", "Float16": "float16",
    "BFloat16": "bfloat16", "Real": "float32", "Inexact": "float32", "Num": "float32", "Shaped": "float32",
    "Int": "int64", "Integer": "int64", "Int64": "int64", "Int32": "int32", "Int16": "int16", "Int8": "int8",
    "UInt8": "uint8", "Bool": "bool",
}
DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "float", "double", "long", "int", "half"}
_COMMENT = re.compile(r"#\s*shapes?\s*:\s*(.+)$")
_NAMED = re.compile(r"([A-Za-z_]\w*)\s*=\s*([(\[][^)\]]*[)\]])\s*([A-Za-z]\w*)?")
_UNNAMED = re.compile(r"^([(\[][^)\]]*[)\]])\s*([A-Za-z]\w*)?")


class NoAnnotations(Exception):
    """Why the annotations do not give inputs (one sentence)."""


def find_def(tree: ast.Module, function: str):
    owner, _, method = function.partition(".")
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not method and node.name == owner:
            return node
        if isinstance(node, ast.ClassDef) and method and node.name == owner:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
                    return item
    return None


def specs(source: str, function: str) -> dict:
    """{parameter: (dims, dtype name)} for every parameter without a default; raises NoAnnotations."""
    try:
        node = find_def(ast.parse(source), function)
    except SyntaxError:
        node = None
    if node is None:
        raise NoAnnotations("its definition was not found in the file")
    lines = source.split("\n")
    params = node.args.posonlyargs + node.args.args
    if "." in function and params:
        params = params[1:]  # self
    required = len(params) - len(node.args.defaults)
    found, missing = {}, []
    for index, arg in enumerate(params):
        spec = _jaxtyping(arg.annotation) or _comment(arg, lines, params)
        if spec is not None:
            found[arg.arg] = spec
        elif index < required:
            missing.append(arg.arg)
    for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
        spec = _jaxtyping(arg.annotation) or _comment(arg, lines, params)
        if spec is not None:
            found[arg.arg] = spec
        elif default is None:
            missing.append(arg.arg)
    if not found:
        raise NoAnnotations("its parameters have no shape annotations")
    if missing:
        raise NoAnnotations(f"parameter{'s' * (len(missing) > 1)} {', '.join(missing)} "
                            f"{'have' if len(missing) > 1 else 'has'} no shape annotation")
    return found


def _jaxtyping(annotation):
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(annotation, ast.Subscript):
        return None
    base = annotation.value
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
    index = annotation.slice
    if name not in JAX_DTYPES or not isinstance(index, ast.Tuple) or len(index.elts) < 2:
        return None
    dims = index.elts[-1]
    if not (isinstance(dims, ast.Constant) and isinstance(dims.value, str)):
        return None
    return dims.value.split(), JAX_DTYPES[name]


def _comment(arg, lines, params):
    text = lines[arg.lineno - 1] if 0 < arg.lineno <= len(lines) else ""
    match = _COMMENT.search(text)
    if match is None:
        return None
    body = match.group(1).strip()
    for name, dims, dtype in _NAMED.findall(body):
        if name == arg.arg:
            return _dims(dims), _dtype(dtype)
    unnamed = _UNNAMED.match(body)
    on_line = [p for p in params if p.lineno == arg.lineno]
    if unnamed and len(on_line) == 1:
        return _dims(unnamed.group(1)), _dtype(unnamed.group(2))
    return None


def _dims(text: str) -> list:
    return [d.strip() for d in text.strip("()[] ").split(",") if d.strip()]


def _dtype(word: str | None) -> str:
    word = (word or "float32").lower()
    aliases = {"float": "float32", "double": "float64", "long": "int64", "int": "int64", "half": "float16"}
    return aliases.get(word, word) if word in DTYPES else "float32"


def build(found: dict) -> tuple[dict, str]:
    """Tensors for the specs (the RNG is already seeded) and a description of them."""
    import torch

    torch.manual_seed(0)
    sizes: dict = {}
    tensors, described = {}, []
    for name, (dims, dtype_name) in found.items():
        shape = []
        for dim in dims:
            dim = dim.lstrip("#_")
            if dim.startswith("*") or dim == "...":
                continue
            if dim.isdigit():
                shape.append(int(dim))
            elif dim.isidentifier():
                shape.append(sizes.setdefault(dim, DEFAULT_DIM))
            else:
                raise NoAnnotations(f"cannot read the dimension {dim!r} of `{name}`")
        dtype = getattr(torch, dtype_name)
        if dtype == torch.bool:
            tensors[name] = torch.rand(shape) < 0.5
        elif dtype.is_floating_point:
            tensors[name] = torch.randn(shape, dtype=dtype)
        else:
            tensors[name] = torch.randint(0, DEFAULT_DIM, shape, dtype=dtype)
        described.append(f"{name} {tuple(shape)} {dtype_name}")
    named = ", ".join(f"{k}={v}" for k, v in sizes.items())
    return tensors, "shape annotations: " + "; ".join(described) + (f" (named sizes: {named})" if named else "")
