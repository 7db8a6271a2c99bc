#!/usr/bin/env node
require('./run-bundle.cjs')('afd-agent.cjs');
