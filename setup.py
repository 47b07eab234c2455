from setuptools import setup

setup(cffi_modules=["seer/_build.py:ffibuilder"])
