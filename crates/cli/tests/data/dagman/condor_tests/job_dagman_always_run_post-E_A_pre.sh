#! /usr/bin/env sh
echo "PRE E_A running"
if test $1 -gt 1; then
	exit 0
else
	exit 1
fi
