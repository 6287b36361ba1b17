#!/usr/bin/env bash
# find_python.sh 3.12: print the path of a working CPython 3.12 interpreter, or nothing.
# Looks at python3.12 on PATH (a pyenv shim counts only if it runs), then pyenv's versions.
set -u
version=$1
works() { "$1" -c "import sys; assert sys.version_info[:2] == tuple(map(int, '$version'.split('.')))" >/dev/null 2>&1; }
if candidate=$(command -v "python$version" 2>/dev/null) && works "$candidate"; then
  echo "$candidate"; exit 0
fi
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for candidate in "$root"/versions/"$version".*/bin/"python$version" /usr/bin/"python$version" /usr/local/bin/"python$version"; do
  if [ -x "$candidate" ] && works "$candidate"; then
    echo "$candidate"; exit 0
  fi
done
exit 0
