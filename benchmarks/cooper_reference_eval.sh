#!/bin/bash
# The released CooperBench evaluator's merge-and-test steps, re-done by us in plain shell so
# masgrid's evaluator can be compared with them pair by pair (benchmarks/cooper_validate_release.py).
# Written from reading the release's eval/sandbox.py; shares no code with masgrid/_private/envs/tasks/cooper.
#
# Steps as the release takes them: agent1 and agent2 branches from the base (git apply, falling
# back to --3way); check out agent2 and merge agent1 (naive); on conflict, abort, append
# "* merge=union" to the tree's .gitattributes and merge again (union); a union merge that
# still conflicts fails both features. The merged diff against the base is then applied to a
# clean base checkout together with each feature's tests.patch, and the pytest command runs.
# A feature passes when pytest exits 0 and its output's first "N passed" has N > 0.
#
# usage: cooper_reference_eval.sh CLONE BASE PATCH1 PATCH2 TESTS1 TESTS2 WORKDIR PYTHON SRCROOT PYTEST_ARGS...
# prints: MERGE=<clean|union|failed> F1=<0|1> F2=<0|1>
set -u
CLONE=$1 BASE=$2 P1=$(realpath "$3") P2=$(realpath "$4") T1=$(realpath "$5") T2=$(realpath "$6")
WORK=$7 PY=$8 SRCREL=$9
shift 9
export GIT_AUTHOR_NAME=ref GIT_AUTHOR_EMAIL=ref@invalid GIT_COMMITTER_NAME=ref GIT_COMMITTER_EMAIL=ref@invalid
git clone -q --shared --no-checkout "$CLONE" "$WORK/r" || exit 3
cd "$WORK/r" || exit 3
git checkout -q --detach "$BASE" || exit 3

branch() {  # name patch
    git checkout -q -B "$1" "$BASE"
    if [ -s "$2" ]; then git apply "$2" 2>/dev/null || git apply --3way "$2" 2>/dev/null || echo "APPLY_FAILED $1" >&2; fi
    git add -A && git commit -q --allow-empty -m "$1"
}
branch agent1 "$P1"
branch agent2 "$P2"

git checkout -q agent2
MERGE=clean
if git merge -q --no-ff --no-commit agent1 >/dev/null 2>&1; then
    git commit -q -m naive
else
    git merge --abort
    git reset -q --hard
    echo "* merge=union" >> .gitattributes
    if git merge -q --no-ff --no-commit agent1 >/dev/null 2>&1; then
        git commit -q -m union
        MERGE=union
    else
        git merge --abort
        MERGE=failed
    fi
    git checkout -q -- .gitattributes 2>/dev/null || rm -f .gitattributes
fi
if [ "$MERGE" = failed ]; then echo "MERGE=failed F1=0 F2=0"; exit 0; fi
git diff "$BASE" HEAD > "$WORK/merged.patch"

run_feature() {  # tests.patch pytest-args... -> 0/1
    local tests=$1
    shift
    git checkout -q --force --detach "$BASE" && git clean -qfdx
    git apply --ignore-whitespace --ignore-space-change "$WORK/merged.patch" 2>/dev/null \
        || git apply --3way "$WORK/merged.patch" 2>/dev/null
    git apply --ignore-whitespace --ignore-space-change "$tests" 2>/dev/null || git apply --3way "$tests" 2>/dev/null
    OUT=$(PYTHONPATH="$WORK/r/$SRCREL" PYTHONDONTWRITEBYTECODE=1 timeout 600 "$PY" -m pytest "$@" 2>&1)
    CODE=$?
    N=$(printf '%s\n' "$OUT" | grep -oE '[0-9]+ passed' | head -1 | cut -d' ' -f1)
    if [ "$CODE" -eq 0 ] && [ "${N:-0}" -gt 0 ]; then echo 1; else echo 0; fi
}
A=$(run_feature "$T1" "$@")
B=$(run_feature "$T2" "$@")
echo "MERGE=$MERGE F1=$A F2=$B"
