#!/usr/bin/env node
require('./run-bundle.cjs')('afd-bench.cjs');
