# The rock: the release artifacts, and the targets luarocks runs.
#
#   make rock        build/rock/kinformer-$(ROCK_VER).tar.gz (the release
#                    tarball), build/rock/server/ (a rocks server: the
#                    .src.rock, the rockspec, manifest); see docs/deploy.md
#   make rock-check  installs kinformer by name from that server into an
#                    empty tree and runs an example operator from it
#                    (tools/rock-check.sh)
#
# rock-build and rock-install are what `luarocks install kinformer` runs
# (build.type "make" in rockspec/kinformer-*.rockspec) inside its unpacked
# copy of the tarball: never in a checkout by hand.

.PHONY: rock rock-build rock-install

ROCKSPEC := $(lastword $(sort $(filter-out %-scm-1.rockspec,$(wildcard rockspec/kinformer-*.rockspec))))
ROCK_FULLVER := $(patsubst rockspec/kinformer-%.rockspec,%,$(ROCKSPEC))
ROCK_VER := $(patsubst %-$(lastword $(subst -, ,$(ROCK_FULLVER))),%,$(ROCK_FULLVER))
ROCK_DIR := build/rock
ROCK_TARBALL := $(ROCK_DIR)/kinformer-$(ROCK_VER).tar.gz
ROCK_SERVER := $(ROCK_DIR)/server
LUAROCKS ?= luarocks --lua-version 5.4

# The release tarball holds the files git tracks, plus new files not yet
# committed that .gitignore does not exclude, as they are in the work tree
# (what `git archive HEAD` would hold once they are committed), under
# kinformer-$(ROCK_VER)/, with fixed owners, order and dates (reproducible).
# The source rock is the rockspec plus that tarball in a zip (what `luarocks
# pack` makes, with zip(1) as luarocks does, without fetching source.url: the release does not exist yet
# when it is built); luarocks-admin writes the server's manifest.
rock:
	@rm -rf $(ROCK_DIR) && mkdir -p $(ROCK_SERVER)
	git ls-files -z --cached --others --exclude-standard | sort -z | \
	  xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh | \
	  tar --null -T - --transform 's,^,kinformer-$(ROCK_VER)/,' --sort=name \
	      --owner=0 --group=0 --numeric-owner --mtime='@0' -cf - | gzip -n > $(ROCK_TARBALL)
	cp $(ROCKSPEC) $(ROCK_SERVER)/
	cd $(ROCK_SERVER) && cp ../kinformer-$(ROCK_VER).tar.gz . && \
	  touch -d @0 kinformer-$(ROCK_FULLVER).rockspec kinformer-$(ROCK_VER).tar.gz && \
	  zip -q -X kinformer-$(ROCK_FULLVER).src.rock kinformer-$(ROCK_FULLVER).rockspec kinformer-$(ROCK_VER).tar.gz && \
	  rm kinformer-$(ROCK_VER).tar.gz
	luarocks-admin --lua-version 5.4 make-manifest $(ROCK_SERVER) >/dev/null
	@echo "rock: $(ROCK_TARBALL), server $(ROCK_SERVER)/ (kinformer $(ROCK_FULLVER)):"
	@ls $(ROCK_SERVER)

# Run by luarocks (build_variables / install_variables in the rockspec);
# the compiler's own folders are dropped from the flags (an explicit
# -I/usr/include reorders the system headers).
ROCK_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
rock-build:
	$(MAKE) --no-print-directory -j$(ROCK_JOBS) MODE=release LUA_INC='$(LUA_INC)' \
	  CFLAGS='$(ROCK_CFLAGS) $(filter-out -I/usr/include,$(sort $(ROCK_CPPFLAGS)))' \
	  LDFLAGS='$(filter-out -L/usr/lib,$(sort $(ROCK_LDFLAGS)))' build sim

rock-install:
	@test -n '$(LUADIR)' -a -n '$(LIBDIR)' -a -n '$(BINDIR)' || \
	  { echo 'rock-install: run by luarocks (LUADIR, LIBDIR, BINDIR)' >&2; exit 1; }
	cd lua && find kinformer -name '*.lua' | while read -r f; do \
	  install -D -m 644 "$$f" '$(LUADIR)'/"$$f" || exit 1; done
	install -d '$(LIBDIR)/kinformer' '$(BINDIR)'
	install -m 755 build/release/kinformer/*.so '$(LIBDIR)/kinformer/'
	install -m 755 build/release/kinformer-sim bin/kinformer '$(BINDIR)/'
