from setuptools import setup

setup(cffi_modules=["seer_consensus/_build.py:ffibuilder"])
