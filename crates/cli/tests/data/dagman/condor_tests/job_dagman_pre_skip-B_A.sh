#! /usr/bin/env sh
exit 1
