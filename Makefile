# The two commands of the README. Both install what is missing first (scripts/setup.sh): demo
# only what the demo needs, test everything (--all: chromium and the Python environment).
.PHONY: demo test
# `make demo DEMO_ARGS=--no-emu` passes options to `leocc demo` (here: simulator only).
DEMO_ARGS ?=
demo:
	./scripts/demo.sh $(DEMO_ARGS)
test:
	./scripts/test.sh
