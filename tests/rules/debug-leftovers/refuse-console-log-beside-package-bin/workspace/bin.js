#!/usr/bin/env node
import install from "./index.js"
install(process.argv[2])
