#! /usr/bin/env sh
echo "PRE D_A running"
exit 1
