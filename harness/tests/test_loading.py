"""Loading problems: clear one-line errors, seeding, overrides, dtype casts."""

from __future__ import annotations

import unittest

import torch

from kagent_harness.failures import RequestError
from kagent_harness.loading import fresh_inputs, load_for_profile, load_problem, references_intact
from tests.helpers import ADD_RELU, SEEDS, TempFilesCase


class LoadingErrorsTest(TempFilesCase):
    def assertProblemError(self, source: str, fragment: str, **options) -> None:
        with self.assertRaises(RequestError) as ctx:
            self.problem(source, **options)
        err = ctx.exception
        self.assertEqual(err.kind, "problem", err.message)
        self.assertIn(fragment, err.message)
        self.assertIn("problem", err.message.split(":")[0])  # names the file
        self.assertNotIn("\n", err.message)

    def test_import_failure(self) -> None:
        self.assertProblemError("import no_such_module_q\n", "import failed: ModuleNotFoundError")

    def test_system_exit_at_import(self) -> None:
        self.assertProblemError("import sys\nsys.exit(1)\n", "SystemExit")

    def test_missing_names(self) -> None:
        self.assertProblemError("def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n", "no class Model")
        src = ADD_RELU.replace("def get_inputs():", "def other_inputs():")
        self.assertProblemError(src, "no function get_inputs()")
        src = ADD_RELU.replace("def get_init_inputs():", "def other_init():")
        self.assertProblemError(src, "no function get_init_inputs()")

    def test_get_inputs_raises(self) -> None:
        src = ADD_RELU.replace("return [torch.randn(N, D), torch.randn(N, D)]", "raise ValueError('no data')")
        self.assertProblemError(src, "get_inputs raised ValueError: no data")

    def test_model_raises(self) -> None:
        src = ADD_RELU.replace("return torch.relu(x + y)", "raise TypeError('bad forward')")
        self.assertProblemError(src, "Model.forward raised TypeError: bad forward")

    def test_unknown_shape_override(self) -> None:
        self.assertProblemError(ADD_RELU, "'BATCH' is not a module-level name", shapes=[{"BATCH": 3}])

    def test_bad_requests(self) -> None:
        with self.assertRaises(RequestError) as ctx:
            self.problem(seeds=[1, 2])
        self.assertEqual(ctx.exception.kind, "bad_request")
        with self.assertRaises(RequestError) as ctx:
            self.problem(dtype="fp8")
        self.assertEqual(ctx.exception.kind, "bad_request")
        with self.assertRaises(RequestError) as ctx:
            self.problem(tf32="maybe")
        self.assertEqual(ctx.exception.kind, "bad_request")


class LoadingTest(TempFilesCase):
    def test_seeded_and_distinct_draws(self) -> None:
        a = self.problem()
        b = self.problem()
        self.assertEqual(len(a.draws), len(SEEDS))
        for da, db in zip(a.draws, b.draws):
            self.assertTrue(torch.equal(da.inputs[0], db.inputs[0]))
        self.assertFalse(torch.equal(a.draws[0].inputs[0], a.draws[1].inputs[0]))
        ref = torch.relu(a.draws[1].inputs[0] + a.draws[1].inputs[1])
        self.assertTrue(torch.equal(ref, a.draws[1].ref))

    def test_shape_overrides_restored(self) -> None:
        p = self.problem(shapes=[{"N": 5}, {"N": 3, "D": 2}])
        self.assertEqual(list(p.extra[0].draws[0].inputs[0].shape), [5, 8])
        self.assertEqual(list(p.extra[1].draws[0].inputs[0].shape), [3, 2])
        self.assertEqual(p.module.N, 16)
        self.assertEqual(list(p.draws[0].inputs[0].shape), [16, 8])
        self.assertEqual(p.summary()["shapes"], ["{N: 5}", "{N: 3, D: 2}"])

    def test_size_sets_the_timed_shape(self) -> None:
        p = self.problem(size={"N": 4, "D": 3}, shapes=[{"N": 5}])
        self.assertEqual([list(d.inputs[0].shape) for d in p.draws], [[4, 3]] * len(SEEDS))
        self.assertEqual(list(p.draws[0].ref.shape), [4, 3])
        # Held-out shapes override the problem's own sizes, not the timed ones.
        self.assertEqual(list(p.extra[0].draws[0].inputs[0].shape), [5, 8])
        self.assertEqual((p.module.N, p.module.D), (16, 8))
        fresh = fresh_inputs(p)
        self.assertEqual(list(fresh[0].shape), [4, 3])
        self.assertEqual((p.module.N, p.module.D), (16, 8))
        _, shape_set = load_for_profile({"problem_path": p.path, "seeds": SEEDS, "size": {"N": 4, "D": 3}}, self.device, "prof")
        self.assertEqual(list(shape_set.draws[0].inputs[0].shape), [4, 3])

    def test_size_names_a_constant(self) -> None:
        with self.assertRaises(RequestError) as ctx:
            self.problem(size={"batch": 4})
        self.assertIn("'batch' is not a module-level name", ctx.exception.message)

    def test_dtype_cast_floats_only(self) -> None:
        src = """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(4))
            def forward(self, x, idx):
                return x[idx] * self.w
        def get_inputs():
            return [torch.randn(6, 4), torch.tensor([0, 2, 5])]
        def get_init_inputs():
            return []
        """
        p = self.problem(src, dtype="bf16")
        x, idx = p.draws[0].inputs
        self.assertEqual(x.dtype, torch.bfloat16)
        self.assertEqual(idx.dtype, torch.int64)
        self.assertEqual(p.model.w.dtype, torch.bfloat16)
        self.assertEqual(p.draws[0].ref.dtype, torch.bfloat16)

    def test_reference_runs_on_a_copy(self) -> None:
        src = ADD_RELU.replace("return torch.relu(x + y)", "return x.add_(y).relu_()")
        p = self.problem(src)
        self.assertIsNone(references_intact(p))
        # The in-place reference did not modify the stored inputs.
        self.assertFalse(torch.equal(p.draws[0].inputs[0], p.draws[0].ref))

    def test_secret_seed_not_left_in_the_rngs(self) -> None:
        import random

        p = self.problem()
        self.assertNotIn(torch.initial_seed(), SEEDS)
        random_after = random.random()
        random.seed(SEEDS[-1])
        self.assertNotEqual(random_after, random.random())
        _, shape_set = load_for_profile({"problem_path": p.path, "seeds": SEEDS, "shapes": [{"N": 5}]}, self.device, "prof")
        self.assertNotIn(torch.initial_seed(), SEEDS)
        self.assertEqual(len(shape_set.draws), 1)

    def test_extra_shapes_drawn_from_the_secret_seed(self) -> None:
        p = self.problem(shapes=[{"N": 5}])
        torch.manual_seed(SEEDS[-1])
        want = torch.randn(5, 8)
        self.assertTrue(torch.equal(p.extra[0].draws[0].inputs[0], want))

    def test_tf32_reported(self) -> None:
        self.assertEqual(self.problem(tf32="allow").summary()["tf32"], "allow")
        self.assertEqual(self.problem().summary()["tf32"], "forbid")


WEIGHTED_COUNTED = """
import torch
import torch.nn as nn

FORWARDS = []

class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d))

    def forward(self, x):
        FORWARDS.append(tuple(x.shape))
        return x * self.w

N = 16
D = 8

def get_inputs():
    return [torch.randn(N, D)]

def get_init_inputs():
    return [D]
"""


class LoadForProfileTest(TempFilesCase):
    def load(self, **options):
        path = self.write(WEIGHTED_COUNTED, "profiled.py")
        req = {"problem_path": path, "seeds": SEEDS}
        req.update(options)
        full = load_problem(dict(req), self.device, "full")
        return full, load_for_profile(dict(req), self.device, "profile")

    def test_same_first_draw_and_weights_without_the_reference(self) -> None:
        for shapes, label in (([], "default"), ([{"N": 5}, {"N": 3}], "{N: 5}")):
            with self.subTest(shapes=shapes):
                full, (problem, shape_set) = self.load(shapes=shapes)
                want = full.extra[0] if shapes else full.main
                self.assertEqual(shape_set.label, label)
                self.assertEqual(len(shape_set.draws), 1)
                self.assertIsNone(shape_set.draws[0].ref)
                self.assertTrue(torch.equal(shape_set.draws[0].inputs[0], want.draws[0].inputs[0]))
                self.assertTrue(torch.equal(shape_set.model.w, want.model.w))
                self.assertEqual(shape_set.init_inputs, want.init_inputs)
                # The reference never ran and no FLOPs were counted.
                self.assertEqual(problem.module.FORWARDS, [])
                self.assertIsNone(problem.flops)
                self.assertEqual(problem.init_seed, SEEDS[0])

    def test_dtype_applied(self) -> None:
        _, (_, shape_set) = self.load(dtype="fp16")
        self.assertEqual(shape_set.draws[0].inputs[0].dtype, torch.float16)
        self.assertEqual(shape_set.model.w.dtype, torch.float16)

    def test_bad_request_is_refused_the_same_way(self) -> None:
        with self.assertRaises(RequestError) as ctx:
            load_for_profile({"problem_path": self.write(WEIGHTED_COUNTED), "seeds": [1]}, self.device, "p")
        self.assertEqual(ctx.exception.kind, "bad_request")


if __name__ == "__main__":
    unittest.main()
