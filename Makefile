# gdkit — guaranteed delivery for shell pipelines.
#   make            build bin/gdpub bin/gdsub bin/gdack bin/gdinspect
#   make check      build and run every test (SANITIZE=1: ASan + UBSan, clang)
#   make demo       publish to two subscriber pipelines and show the outcome
#   make bench      throughput, latency and memory against peers
#   make chaos      the delivery recipes under kill -9 and network faults
#                   (CHAOS_BLOCKS, CHAOS_KILLS, CHAOS_SEED...: tests/chaos/chaos.py)
#   make fuzz       libFuzzer targets, FUZZ_TIME seconds each (clang)
#   make valgrind   core scenarios under valgrind (not part of check)
#   make install    PREFIX=/usr/local DESTDIR=: the programs, their pages,
#                   the systemd units (install-units: UNITDIR, SYSUSERSDIR,
#                   TMPFILESDIR, SYSCONFDIR, whose gdkit/ the units read)

PREFIX ?= /usr/local
DESTDIR ?=
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSCONFDIR ?= /etc
CC ?= cc
PKGS = libuv inih libssl libcrypto

ifeq ($(FUZZ),1)
VARIANT = fuzz
CC = clang
OPT = -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
	-fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(SANITIZE),1)
VARIANT = san
# clang unless CC is named: its UBSan (pointer-overflow) catches NULL + 0,
# which gcc 12 has no check for (tests/fuzz/regress/state went unseen)
ifeq ($(origin CC),default)
CC = clang
endif
OPT = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(BENCH),1)
VARIANT = bench
OPT = -O2 -g
else
VARIANT = rel
OPT = -O2 -g
endif

BUILD = build/$(VARIANT)
BINDIR = $(if $(filter rel,$(VARIANT)),bin,$(BUILD)/bin)
CFLAGS_BASE = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
	-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes $(OPT) $(CFLAGS)
CFLAGS_ALL = $(CFLAGS_BASE) -Ilib
# src/ sees the library's public tier only: its one include directory holds
# nothing but a gdkit.h that includes lib/gdkit.h by a relative path, so a
# main's #include "pending.h" finds no file, while gdkit.h's own includes
# are found beside it in lib/ (a quoted include looks in its includer's
# directory first).
CFLAGS_SRC = $(CFLAGS_BASE) -I$(BUILD)/api
DEPCFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
LDFLAGS_ALL = $(OPT) $(LDFLAGS)

LIB_SRC = $(wildcard lib/*.c lib/pub/*.c lib/sub/*.c)
LIB_OBJ = $(LIB_SRC:lib/%.c=$(BUILD)/lib/%.o)
LIB_HDR = $(wildcard lib/*.h lib/pub/*.h lib/sub/*.h)
PROGS = gdpub gdsub gdack gdinspect
PROG_BIN = $(PROGS:%=$(BINDIR)/%)
PROG_OBJ = $(PROGS:%=$(BUILD)/src/%.o)
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
MANS = $(wildcard man/*.[0-9])
# fuzz targets: tests/fuzz/fuzz_T.c; make check replays their corpora
FUZZ_TARGETS = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
REPLAY_BIN = $(FUZZ_TARGETS:%=$(BUILD)/tests/replay_%)
FUZZ_TIME ?= 60

.PHONY: FORCE all deps check check-long demo bench chaos install install-bin \
	install-man install-units uninstall clean lint-man fuzz valgrind
all: deps $(PROG_BIN)
.SECONDARY: $(PROG_OBJ)

# Installs missing Debian packages when root, else says how (mk/deps.sh).
# Everything the compiler makes waits for it (| deps, order-only: it never
# makes a target out of date): make -j2 on a fresh machine would otherwise
# compile beside the apt-get that installs libuv-dev.
deps:
	@sh mk/deps.sh build
ifeq ($(FUZZ),1)
	@sh mk/deps.sh clang
endif
ifeq ($(SANITIZE),1)
	@$(if $(filter clang,$(CC)),sh mk/deps.sh clang,true)
	@$(CC) --version 2>/dev/null | grep -q clang || echo "gdkit:" \
		"SANITIZE=1 with $(CC), not clang: NULL + 0 is not caught" >&2
endif

# The compiler and flags a variant was built with: a change rebuilds it
# (gcc's and clang's sanitizer runtimes do not mix).
$(BUILD)/compiler: FORCE | $(BUILD)/lib deps
	@echo '$(CC) $(OPT)' | cmp -s - $@ || echo '$(CC) $(OPT)' >$@
FORCE:

$(BUILD)/lib/%.o: lib/%.c $(LIB_HDR) $(BUILD)/compiler | $(BUILD)/lib deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPCFLAGS) -c $< -o $@

$(BUILD)/libgdcore.a: $(LIB_OBJ) | deps
	rm -f $@ && ar rcs $@ $^

$(BUILD)/api/gdkit.h: | $(BUILD)/api
	echo '#include "../../../lib/gdkit.h"' >$@

$(BUILD)/src/%.o: src/%.c $(LIB_HDR) $(BUILD)/compiler \
		$(BUILD)/api/gdkit.h | $(BUILD)/src deps
	$(CC) $(CFLAGS_SRC) $(DEPCFLAGS) -c $< -o $@

$(BINDIR)/%: $(BUILD)/src/%.o $(BUILD)/libgdcore.a | $(BINDIR) deps
	$(CC) $< $(BUILD)/libgdcore.a -o $@ $(LDFLAGS_ALL) $(LIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(BUILD)/libgdcore.a | $(BUILD)/tests deps
	$(CC) $(CFLAGS_ALL) $(DEPCFLAGS) -Itests/unit $< $(BUILD)/libgdcore.a -o $@ $(LDFLAGS_ALL) $(LIBS)

$(BUILD)/tests/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(BUILD)/libgdcore.a | $(BUILD)/tests
	$(CC) $(CFLAGS_ALL) $(DEPCFLAGS) -Itests/fuzz -DFUZZ_TARGET='"$*"' \
		-DFUZZ_TOP='"$(abspath .)"' tests/fuzz/replay.c $< \
		$(BUILD)/libgdcore.a -o $@ $(LDFLAGS_ALL) $(LIBS)

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h build/fuzz/libgdcore.a | deps
	$(CC) $(CFLAGS_ALL) $(DEPCFLAGS) -Itests/fuzz -fsanitize=fuzzer $< \
		build/fuzz/libgdcore.a -o $@ $(LDFLAGS_ALL) -fsanitize=fuzzer $(LIBS)

$(BUILD)/lib $(BUILD)/tests $(BUILD)/src $(BUILD)/api $(BINDIR):
	mkdir -p $@

check: all
	@sh mk/deps.sh check
	@$(MAKE) --no-print-directory $(UNIT_BIN) $(REPLAY_BIN)
	@GDKIT_BIN=$(abspath $(BINDIR)) UNIT_DIR=$(abspath $(BUILD)/tests) \
		sh tests/run.sh $(UNIT_BIN:$(BUILD)/tests/%=%) \
		$(REPLAY_BIN:$(BUILD)/tests/%=%)

# The bats tests that carry 10^5-10^6 blocks only for confidence
# (LONG_TESTS in tests/cli/helpers.bash), which check leaves out.
check-long: all
	@sh mk/deps.sh check
	@GDKIT_BIN=$(abspath $(BINDIR)) sh tests/run.sh --long

# Each target for FUZZ_TIME seconds from its committed corpus; new inputs
# stay in build/fuzz/corpus, crashes in build/fuzz/crash-*.
fuzz:
	@sh mk/deps.sh build
	@sh mk/deps.sh clang
	@$(MAKE) --no-print-directory FUZZ=1 $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
	@sh tests/fuzz/run.sh $(FUZZ_TIME) $(FUZZ_TARGETS)

# Core scenarios under valgrind; slow, so not part of check.
valgrind: all
	@sh mk/deps.sh check
	@GDKIT_BIN=$(abspath $(BINDIR)) sh tests/valgrind.sh

demo: all
	@GDKIT_BIN=$(abspath $(BINDIR)) sh tests/demo.sh

bench:
	@sh mk/deps.sh build
	@$(MAKE) --no-print-directory BENCH=1 $(PROGS:%=build/bench/bin/%)
	@GDKIT_BIN=$(abspath build/bench/bin) sh tests/bench/run.sh

chaos: all
	@GDKIT_BIN=$(abspath $(BINDIR)) python3 tests/chaos/chaos.py

lint-man:
	mandoc -Tlint -W warning $(MANS)

install: install-bin install-man install-units

install-bin: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(PROG_BIN) $(DESTDIR)$(PREFIX)/bin/

install-man:
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man7
	for m in $(MANS); do s=$${m##*.}; \
		install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done

# The units name the programs where install-bin puts them and their
# config files under SYSCONFDIR (gdkit(7) RUNNING AS A SERVICE); then, on
# a running system: systemd-sysusers; systemd-tmpfiles --create gdkit.conf;
# systemctl daemon-reload.
UNITS = systemd/gdpub@.socket systemd/gdpub@.service.in \
	systemd/gdkit-pipeline@.service.in
install-units:
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(TMPFILESDIR)
	for u in $(UNITS); do b=$${u##*/}; \
		sed -e 's|@BINDIR@|$(PREFIX)/bin|g' \
		    -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $$u \
		    > $(DESTDIR)$(UNITDIR)/$${b%.in} && \
		chmod 644 $(DESTDIR)$(UNITDIR)/$${b%.in} || exit 1; done
	install -m 644 systemd/gdkit.sysusers $(DESTDIR)$(SYSUSERSDIR)/gdkit.conf
	install -m 644 systemd/gdkit.tmpfiles $(DESTDIR)$(TMPFILESDIR)/gdkit.conf

uninstall:
	rm -f $(PROGS:%=$(DESTDIR)$(PREFIX)/bin/%)
	for m in $(MANS); do s=$${m##*.}; b=$${m##*/}; \
		rm -f $(DESTDIR)$(MANDIR)/man$$s/$$b; done
	for u in $(UNITS); do b=$${u##*/}; \
		rm -f $(DESTDIR)$(UNITDIR)/$${b%.in}; done
	rm -f $(DESTDIR)$(SYSUSERSDIR)/gdkit.conf $(DESTDIR)$(TMPFILESDIR)/gdkit.conf

clean:
	rm -rf build bin
