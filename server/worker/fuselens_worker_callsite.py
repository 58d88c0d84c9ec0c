"""Example inputs from a call site: the file's `if __name__ == "__main__":` block runs (its body,
in the module's namespace) with the target wrapped; the first call's arguments are kept and the
block is stopped right there. `torch.compile` is disabled meanwhile, so a compiled wrapper in the
block calls the wrapped function eagerly.
"""
import ast
import contextlib
import sys


class _Captured(BaseException):
    """Stops the block at the first call (BaseException: `except Exception` in it cannot catch it)."""


class NoCall(Exception):
    """Why the block gave no inputs (one sentence)."""


def main_block(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                and isinstance(node.test.ops[0], ast.Eq):
            sides = [node.test.left, node.test.comparators[0]]
            names = [s.id for s in sides if isinstance(s, ast.Name)]
            values = [s.value for s in sides if isinstance(s, ast.Constant)]
            if names == ["__name__"] and values == ["__main__"]:
                return node
    return None


def capture(module, source: str, path: str, function: str, unwrap):
    """(target, args, kwargs, line of the call) of the first call of `function` in the block."""
    block = main_block(ast.parse(source))
    if block is None:
        raise NoCall('the file has no `if __name__ == "__main__":` block')
    owner, _, method = function.partition(".")
    seen: dict = {}

    def record(instance, args, kwargs):
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != path:
            frame = frame.f_back
        seen.update(instance=instance, args=args, kwargs=kwargs, line=frame.f_lineno if frame else None)
        raise _Captured()

    if method:
        cls = getattr(module, owner)
        original = cls.__dict__.get(method)

        def wrapped_method(self, *args, **kwargs):
            record(self, args, kwargs)
        setattr(cls, method, wrapped_method)
    else:
        original = module.__dict__[owner]

        def wrapped(*args, **kwargs):
            record(None, args, kwargs)
        module.__dict__[owner] = wrapped
    code = compile(ast.Module(body=block.body, type_ignores=[]), path, "exec")
    try:
        with _dynamo_disabled():
            exec(code, module.__dict__)
    except _Captured:
        pass
    except BaseException as error:  # noqa: BLE001 - user code: anything, SystemExit included
        if not seen:
            raise NoCall(f"the `__main__` block raised {type(error).__name__} before calling {function}: "
                         f"{error}") from None
    finally:
        if method and original is None:
            delattr(cls, method)  # it was inherited
        elif method:
            setattr(cls, method, original)
        else:
            module.__dict__[owner] = original
    if not seen:
        raise NoCall(f"the `__main__` block (line {block.lineno}) does not call {function}")
    target = seen["instance"] if method else unwrap(original)
    return target, tuple(seen["args"]), dict(seen["kwargs"]), seen["line"]


@contextlib.contextmanager
def _dynamo_disabled():
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    import torch._dynamo

    with torch._dynamo.config.patch(disable=True):
        yield
