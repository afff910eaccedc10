"""miopen.caffe2.scopes: Caffe2's WorkspaceStack semantics, CreateScope and HasScope, and BlobScope lookups."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miopen.caffe2 import scopes
from miopen.caffe2.scopes import (
    BindingCycleError,
    BindingError,
    BindingsMismatchError,
    BlobRedefinitionError,
    BlobScope,
    EmptyScopeStackError,
    InvalidParentBlobError,
    ParentMismatchError,
    ScopeError,
    ScopeStack,
    ScopeStackError,
    check_bindings_match,
    create_scope,
    has_scope,
)

# Forward bindings of a recurrent step net: inner name -> outer name in the parent.
STEP_BINDINGS = {"input_t": "X", "hidden_prev": "H"}
GRAD_BINDINGS = {"input_t_grad": "X_grad", "hidden_prev_grad": "H_grad"}


def make_parent(name: str = "parent") -> BlobScope:
    parent = BlobScope(name=name)
    for blob, value in {"X": "x-value", "H": "h-value", "X_grad": "dx", "H_grad": "dh"}.items():
        parent[blob] = value
    return parent


# ---------------------------------------------------------------------------------------------
# Forward / backward sequences as in Caffe2's recurrent nets (Do ops inside a step net)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_push_forward_then_pop_gradient_in_reverse(steps: int) -> None:
    parent = make_parent()
    stack = create_scope()
    pushed = []
    for t in range(steps):
        scope = stack.push_forward(parent, STEP_BINDINGS)
        assert stack.top == t and stack.depth == t + 1 and stack.size == t + 1
        assert scope.parent is parent
        assert scope.bindings == STEP_BINDINGS
        assert scope["input_t"] == "x-value" and scope["hidden_prev"] == "h-value"
        scope["activation"] = f"act-{t}"  # an intermediate value of the forward step, local to it
        pushed.append(scope)
    assert len({id(s) for s in pushed}) == steps, "every forward step gets its own scope"
    assert "activation" not in parent

    for t in reversed(range(steps)):
        scope = stack.pop_gradient(parent, GRAD_BINDINGS)
        assert scope is pushed[t]
        assert scope["activation"] == f"act-{t}", "the gradient step sees its forward step's values"
        assert scope["input_t_grad"] == "dx"
        assert stack.top == t - 1
    assert stack.empty() and not has_scope(stack)
    assert stack.size == steps, "popped scopes are kept for reuse"


def test_second_iteration_reuses_the_same_scopes() -> None:
    parent = make_parent()
    stack = create_scope()
    first = [stack.push_forward(parent, STEP_BINDINGS) for _ in range(3)]
    for _ in range(3):
        stack.pop_gradient(parent, GRAD_BINDINGS)
    second = [stack.push_forward(parent, STEP_BINDINGS) for _ in range(3)]
    assert [id(s) for s in second] == [id(s) for s in first]
    assert stack.size == 3
    fourth = stack.push_forward(parent, STEP_BINDINGS)
    assert all(fourth is not s for s in first) and stack.size == 4


def test_reused_scope_drops_local_copies_of_bound_names_and_binds_them_again() -> None:
    parent = make_parent()
    stack = create_scope()
    scope = stack.push_forward(parent, STEP_BINDINGS)
    scope.localize(["input_t"])  # CopyForwardedTensors: now a local copy
    parent["X"] = "x-new"
    assert scope["input_t"] == "x-value"
    assert "input_t" in scope.local_names() and "input_t" not in scope.bindings
    stack.pop_gradient(parent, {})
    again = stack.push_forward(parent, STEP_BINDINGS)
    assert again is scope
    assert "input_t" not in again.local_names()
    assert again.bindings == STEP_BINDINGS
    assert again["input_t"] == "x-new"


def test_reused_scope_without_local_copies_keeps_its_bindings_in_non_debug_mode() -> None:
    # Caffe2 only re-adds the bindings when it deleted a local copy; it does not check them.
    parent = make_parent()
    stack = ScopeStack()
    scope = stack.push_forward(parent, {"a": "X"})
    stack.pop_gradient(parent)
    again = stack.push_forward(parent, {"b": "H"})
    assert again is scope
    assert again.bindings == {"a": "X"}


def test_gradient_bindings_skip_names_the_forward_step_defined() -> None:
    parent = make_parent()
    stack = create_scope()
    scope = stack.push_forward(parent, STEP_BINDINGS)
    scope["local_grad"] = "computed-in-forward"
    popped = stack.pop_gradient(parent, {"local_grad": "X_grad", "hidden_prev_grad": "H_grad"})
    assert popped is scope
    assert popped["local_grad"] == "computed-in-forward"  # skipped: already defined
    assert popped["hidden_prev_grad"] == "dh"
    assert "local_grad" not in popped.bindings and popped.bindings["hidden_prev_grad"] == "H_grad"


def test_gradient_bindings_to_a_missing_parent_blob_raise() -> None:
    parent = make_parent()
    stack = create_scope()
    stack.push_forward(parent)
    with pytest.raises(InvalidParentBlobError, match="'nope'"):
        stack.pop_gradient(parent, {"g": "nope"})
    assert stack.top == 0, "a rejected pop does not move top"


def test_reuse_last_forward() -> None:
    parent = make_parent()
    stack = create_scope()
    assert stack.reuse_last_forward(parent, STEP_BINDINGS) is None
    assert stack.empty() and stack.size == 0
    first = stack.push_forward(parent, {"input_t": "X"})
    top = stack.push_forward(parent, {"input_t": "X"})
    reused = stack.reuse_last_forward(parent, {"hidden_prev": "H"})
    assert reused is top and reused is not first
    assert stack.top == 1 and stack.size == 2
    assert reused["hidden_prev"] == "h-value"
    assert stack.reuse_last_forward(parent) is top
    assert stack.pop_gradient(parent) is top
    assert stack.reuse_last_forward(parent) is first


def test_do_op_pattern_reuse_when_not_empty_else_push() -> None:
    parent = make_parent()
    stack = create_scope()

    def forward_do() -> BlobScope:
        if not stack.empty():
            reused = stack.reuse_last_forward(parent, STEP_BINDINGS)
            assert reused is not None
            return reused
        return stack.push_forward(parent, STEP_BINDINGS)

    a = forward_do()
    b = forward_do()
    assert a is b and stack.depth == 1


def test_caffe2_spelled_aliases() -> None:
    assert ScopeStack.push_forward_workspace is ScopeStack.push_forward
    assert ScopeStack.pop_gradient_workspace is ScopeStack.pop_gradient
    assert ScopeStack.reuse_last_forward_workspace is ScopeStack.reuse_last_forward
    parent = make_parent()
    stack = ScopeStack()
    s = stack.push_forward_workspace(parent, STEP_BINDINGS)
    assert stack.reuse_last_forward_workspace(parent) is s
    assert stack.pop_gradient_workspace(parent, GRAD_BINDINGS) is s


# ---------------------------------------------------------------------------------------------
# Empty, clear, corrupted
# ---------------------------------------------------------------------------------------------


def test_pop_on_a_new_stack_raises() -> None:
    stack = ScopeStack()
    with pytest.raises(EmptyScopeStackError, match="empty scope stack"):
        stack.pop_gradient(make_parent())
    assert issubclass(EmptyScopeStackError, ScopeStackError)
    assert issubclass(ScopeStackError, ScopeError) and issubclass(ScopeError, RuntimeError)


def test_pop_more_than_pushed_raises() -> None:
    parent = make_parent()
    stack = ScopeStack()
    stack.push_forward(parent)
    stack.push_forward(parent)
    stack.pop_gradient(parent)
    stack.pop_gradient(parent)
    with pytest.raises(EmptyScopeStackError):
        stack.pop_gradient(parent)
    assert stack.top == -1 and stack.size == 2


def test_clear_and_empty() -> None:
    parent = make_parent()
    stack = ScopeStack()
    assert stack.empty() and stack.top == -1 and stack.depth == 0
    held = [stack.push_forward(parent) for _ in range(3)]
    assert not stack.empty()
    stack.clear()
    assert stack.empty() and stack.top == -1
    assert stack.size == 3 and stack.scopes == tuple(held), "clear keeps the scopes"
    with pytest.raises(EmptyScopeStackError):
        stack.pop_gradient(parent)
    assert stack.push_forward(parent) is held[0], "the next push reuses the bottom scope"
    stack.clear()
    stack.clear()
    assert stack.empty()


def test_corrupted_stack_is_detected() -> None:
    stack = ScopeStack()
    stack.push_forward(make_parent())
    stack._top = 5  # only reachable by breaking the class's private state
    for call in (stack.clear, lambda: stack.push_forward(make_parent()), lambda: stack.pop_gradient(make_parent())):
        with pytest.raises(ScopeStackError, match="Corrupted workspaces stack: top=5 but 1 scopes"):
            call()


# ---------------------------------------------------------------------------------------------
# Debug mode: parent and bindings checks
# ---------------------------------------------------------------------------------------------


def test_debug_parent_mismatch_on_push_names_both_parents() -> None:
    a, b = make_parent("parent-a"), make_parent("parent-b")
    stack = ScopeStack(debug=True)
    stack.push_forward(a, STEP_BINDINGS)
    with pytest.raises(ParentMismatchError, match="Parent workspace mismatch in push_forward") as info:
        stack.push_forward(b, STEP_BINDINGS)
    assert "parent-a" in str(info.value) and "parent-b" in str(info.value)
    assert info.value.expected is a and info.value.actual is b
    assert stack.top == 0 and stack.size == 1, "a rejected push changes nothing"


def test_debug_parent_mismatch_on_pop_and_reuse() -> None:
    a, b = make_parent("parent-a"), make_parent("parent-b")
    stack = ScopeStack(debug=True)
    stack.push_forward(a, STEP_BINDINGS)
    with pytest.raises(ParentMismatchError, match="in pop_gradient"):
        stack.pop_gradient(b, GRAD_BINDINGS)
    with pytest.raises(ParentMismatchError, match="in reuse_last_forward"):
        stack.reuse_last_forward(b)
    assert stack.top == 0
    assert stack.pop_gradient(a, GRAD_BINDINGS) is stack.scopes[0]


def test_debug_parent_is_compared_by_identity_not_contents() -> None:
    stack = ScopeStack(debug=True)
    stack.push_forward(make_parent("p"))
    with pytest.raises(ParentMismatchError):
        stack.push_forward(make_parent("p"))  # same contents, different scope


def test_debug_forward_bindings_mismatch_names_what_differs() -> None:
    parent = make_parent()
    stack = ScopeStack(debug=True)
    stack.push_forward(parent, {"input_t": "X", "hidden_prev": "H"})
    stack.pop_gradient(parent, GRAD_BINDINGS)
    with pytest.raises(BindingsMismatchError, match="Blob bindings mismatch") as info:
        stack.push_forward(parent, {"input_t": "H", "extra": "X"})  # reuses the popped scope
    err = info.value
    assert err.missing == ("hidden_prev",)
    assert err.extra == ("extra",)
    assert err.changed == {"input_t": ("X", "H")}
    msg = str(err)
    assert "forward bindings" in msg
    assert "'hidden_prev'" in msg and "'extra'" in msg
    assert "'input_t' is bound to 'H', expected 'X'" in msg
    assert stack.empty(), "a rejected push does not move top"


def test_debug_gradient_bindings_are_recorded_separately() -> None:
    parent = make_parent()
    stack = ScopeStack(debug=True)
    stack.push_forward(parent, STEP_BINDINGS)
    stack.push_forward(parent, STEP_BINDINGS)
    stack.pop_gradient(parent, GRAD_BINDINGS)  # differs from the forward bindings: fine
    with pytest.raises(BindingsMismatchError, match="gradient bindings") as info:
        stack.pop_gradient(parent, {"input_t_grad": "X_grad"})
    assert info.value.missing == ("hidden_prev_grad",)
    assert stack.top == 0


def test_debug_reuse_last_forward_checks_given_bindings() -> None:
    parent = make_parent()
    stack = ScopeStack(debug=True)
    scope = stack.push_forward(parent, STEP_BINDINGS)
    assert stack.reuse_last_forward(parent, STEP_BINDINGS) is scope
    assert stack.reuse_last_forward(parent) is scope  # no bindings given: only the parent is checked
    with pytest.raises(BindingsMismatchError, match="reuse_last_forward"):
        stack.reuse_last_forward(parent, {"input_t": "X"})


def test_debug_records_empty_first_bindings_too() -> None:
    parent = make_parent()
    stack = ScopeStack(debug=True)
    stack.push_forward(parent)
    with pytest.raises(BindingsMismatchError) as info:
        stack.push_forward(parent, {"input_t": "X"})
    assert info.value.extra == ("input_t",)


def test_debug_records_survive_clear_and_create_scope() -> None:
    a, b = make_parent("a"), make_parent("b")
    stack = create_scope(debug=True)
    stack.push_forward(a, STEP_BINDINGS)
    same = create_scope(stack)
    assert same is stack and same.empty()
    with pytest.raises(ParentMismatchError):
        stack.push_forward(b, STEP_BINDINGS)


def test_non_debug_mode_does_not_check_parents_or_bindings() -> None:
    a, b = make_parent("a"), make_parent("b")
    stack = ScopeStack()
    assert not stack.debug
    stack.push_forward(a, STEP_BINDINGS)
    stack.push_forward(b, {"input_t": "H"})
    stack.pop_gradient(a, GRAD_BINDINGS)
    stack.pop_gradient(b, {"other": "X_grad"})
    stack.push_forward(a, {})
    assert stack.reuse_last_forward(b, {"fresh": "X"}) is stack.scopes[0]
    assert stack.top == 0


def test_check_bindings_match() -> None:
    check_bindings_match({"a": "A"}, {"a": "A"})
    check_bindings_match({}, {})
    with pytest.raises(BindingsMismatchError, match=r"missing inner names \['b'\]"):
        check_bindings_match({"a": "A", "b": "B"}, {"a": "A"})
    with pytest.raises(BindingsMismatchError, match=r"unexpected inner names \['c'\]"):
        check_bindings_match({"a": "A"}, {"a": "A", "c": "C"})
    with pytest.raises(BindingsMismatchError, match="'a' is bound to 'Z', expected 'A'"):
        check_bindings_match({"a": "A"}, {"a": "Z"})
    assert issubclass(BindingsMismatchError, ValueError) and issubclass(ParentMismatchError, ValueError)


def test_debug_flag_must_be_bool() -> None:
    with pytest.raises(TypeError):
        ScopeStack(debug=1)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# CreateScope / HasScope
# ---------------------------------------------------------------------------------------------


def test_create_scope_new_and_existing() -> None:
    fresh = create_scope()
    assert isinstance(fresh, ScopeStack) and fresh.empty() and not fresh.debug
    assert create_scope(debug=True).debug
    assert create_scope() is not fresh

    parent = make_parent()
    held = [fresh.push_forward(parent) for _ in range(2)]
    assert create_scope(fresh) is fresh
    assert fresh.empty() and fresh.scopes == tuple(held)
    assert create_scope(fresh, debug=False) is fresh
    with pytest.raises(ValueError, match="debug"):
        create_scope(fresh, debug=True)
    with pytest.raises(TypeError):
        create_scope(BlobScope())  # type: ignore[arg-type]


def test_has_scope() -> None:
    parent = make_parent()
    stack = create_scope()
    assert has_scope(stack) is False
    stack.push_forward(parent)
    assert has_scope(stack) is True
    stack.pop_gradient(parent)
    assert has_scope(stack) is False
    stack.push_forward(parent)
    create_scope(stack)
    assert has_scope(stack) is False
    with pytest.raises(TypeError):
        has_scope(None)  # type: ignore[arg-type]


def test_blob_scopes_live_under_caffe2_not_the_top_level() -> None:
    """The scopes use no MIOpen and no GPU: Caffe2's, under `miopen.caffe2`; the top level has none of their names."""
    import miopen
    import miopen.caffe2

    assert miopen.caffe2.scopes is scopes and miopen.caffe2.Workspace is BlobScope
    for name in ("scopes", "create_scope", "has_scope"):
        assert not hasattr(miopen, name), name
        assert name not in dir(miopen)


# ---------------------------------------------------------------------------------------------
# BlobScope
# ---------------------------------------------------------------------------------------------


def test_blob_scope_inherits_only_bound_names() -> None:
    parent = make_parent()
    child = BlobScope(parent, {"x": "X"})
    assert child["x"] == "x-value"
    assert "H" not in child and "X" not in child
    with pytest.raises(KeyError):
        child["H"]
    assert child.local_names() == []
    assert list(child) == ["x"] and len(child) == 1


def test_blob_scope_writes_through_bindings_and_set_local_hides() -> None:
    parent = make_parent()
    child = BlobScope(parent, {"x": "X"})
    child["x"] = "written"
    assert parent["X"] == "written"
    child["y"] = "local"
    assert "y" not in parent and child.local_names() == ["y"]
    child.set_local("x", "shadow")
    shadow: object = child["x"]
    assert shadow == "shadow" and parent["X"] == "written"
    assert child.remove("x") is True and child["x"] == "written"
    assert child.remove("x") is False, "remove never deletes the parent's blob"
    assert parent["X"] == "written"
    with pytest.raises(KeyError):
        del child["x"]
    del child["y"]
    assert "y" not in child


def test_blob_scope_shared_falls_through_after_local_and_bound() -> None:
    shared = BlobScope(name="shared")
    shared["s"] = 1
    parent = make_parent()
    with pytest.raises(BlobRedefinitionError):
        BlobScope(parent, {"s": "X"}, shared=shared)  # a shared name counts as defined
    scope = BlobScope(parent, {"x": "X"}, shared=shared)
    shared["x"] = "from-shared"
    assert scope["s"] == 1
    assert scope["x"] == "x-value", "bindings come before the shared scope"
    scope.set_local("s", 2)
    hidden: object = scope["s"]
    assert hidden == 2 and shared["s"] == 1
    assert sorted(scope) == ["s", "x"]


def test_blob_scope_binding_errors() -> None:
    parent = make_parent()
    with pytest.raises(BindingError, match="Parent scope must be given"):
        BlobScope(None, {"x": "X"})
    with pytest.raises(InvalidParentBlobError, match="'missing'"):
        BlobScope(parent, {"x": "missing"})
    child = BlobScope(parent, {"x": "X"})
    child.add_bindings(parent, {"x": "X"})  # the same binding again: no-op
    with pytest.raises(BlobRedefinitionError, match="Redefinition of blob 'x'"):
        child.add_bindings(parent, {"x": "H"})
    other = make_parent("other")
    with pytest.raises(BlobRedefinitionError, match="'x'"):
        child.add_bindings(other, {"x": "X"})
    child["loc"] = 1
    with pytest.raises(BlobRedefinitionError, match="already defined"):
        child.add_bindings(parent, {"loc": "X"})
    child.add_bindings(parent, {"loc": "X"}, skip_defined=True)
    assert child["loc"] == 1
    with pytest.raises(TypeError):
        child.add_bindings(parent, {"k": 3})  # type: ignore[dict-item]


def test_rejected_add_bindings_changes_nothing() -> None:
    parent = make_parent()
    child = BlobScope(parent)
    child["taken"] = 0
    with pytest.raises(BlobRedefinitionError):
        child.add_bindings(parent, {"new": "X", "taken": "H"})
    assert child.bindings == {}
    with pytest.raises(InvalidParentBlobError):
        child.add_bindings(parent, {"new": "X", "bad": "nope"})
    assert child.bindings == {}


def test_binding_cycle_is_an_error_not_a_recursion() -> None:
    # add_bindings only binds to names that resolve, so a cycle cannot be built through the
    # public API; the lookup still refuses to loop forever if private state is broken.
    a, b = BlobScope(name="a"), BlobScope(name="b")
    a._forwarded["x"] = (b, "y")
    b._forwarded["y"] = (a, "x")
    with pytest.raises(BindingCycleError, match="cycle through"):
        a["x"]
    assert "x" not in b._blobs


def test_blob_scopes_compare_by_identity() -> None:
    one, two = BlobScope(), BlobScope()
    assert one == one and one != two
    assert len({one, two}) == 2


def test_localize_copies_the_parent_value() -> None:
    parent = BlobScope()
    parent["T"] = [1, 2]
    child = BlobScope(parent, {"t": "T"})
    child.localize(["t", "not-bound"])
    local = child["t"]
    assert local == [1, 2] and local is not parent["T"]
    assert child.local_names() == ["t"] and child.bindings == {}


# ---------------------------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def fast_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@pytest.mark.usefixtures("fast_switching")
def test_concurrent_balanced_push_pop_keeps_the_stack_consistent() -> None:
    parent = make_parent()
    stack = ScopeStack()
    threads_n, rounds = 8, 1000
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(rounds):
                stack.push_forward(parent, STEP_BINDINGS)
                stack.pop_gradient(parent)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert stack.empty() and stack.top == -1
    # Each thread holds at most one pushed scope at a time, so no more scopes than threads.
    assert 1 <= stack.size <= threads_n


# ---------------------------------------------------------------------------------------------
# Property: any interleaving of push / pop / reuse / clear keeps the invariants
# ---------------------------------------------------------------------------------------------

OPS = st.lists(st.sampled_from(["push", "pop", "reuse", "clear"]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops=OPS, debug=st.booleans())
def test_any_interleaving_keeps_the_stack_invariants(ops: list[str], debug: bool) -> None:
    parent = make_parent()
    stack = ScopeStack(debug=debug)
    model: list[BlobScope] = []  # every scope the stack should hold, bottom first
    top = -1
    for op in ops:
        if op == "push":
            scope = stack.push_forward(parent, STEP_BINDINGS)
            if top == len(model) - 1:
                assert all(scope is not s for s in model), "a new scope when none is left to reuse"
                model.append(scope)
            else:
                assert scope is model[top + 1], "the scope above top is reused"
            top += 1
            scope.set_local("depth", top)
        elif op == "pop":
            if top < 0:
                with pytest.raises(EmptyScopeStackError):
                    stack.pop_gradient(parent, GRAD_BINDINGS)
            else:
                scope = stack.pop_gradient(parent, GRAD_BINDINGS)
                assert scope is model[top], "the popped scope is the one pushed at that depth"
                assert scope["depth"] == top
                top -= 1
        elif op == "reuse":
            reused = stack.reuse_last_forward(parent, STEP_BINDINGS)
            assert reused is (model[top] if top >= 0 else None)
        else:
            stack.clear()
            top = -1
        assert -1 <= stack.top < stack.size
        assert stack.top == top and stack.depth == top + 1
        assert stack.scopes == tuple(model)
        assert stack.empty() == (top < 0) == (not has_scope(stack))
