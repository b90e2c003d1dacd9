"""A user test that always fails (checks that the user_test check runs)."""
import sys

from kernel import kernel_function  # noqa: F401

print("FAIL: this test demands something the kernel does not do")
sys.exit(3)
