#! /usr/bin/env sh
echo "POST D_A running"
exit 0
