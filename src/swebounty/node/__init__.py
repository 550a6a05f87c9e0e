"""JavaScript/TypeScript tasks: their evaluation path, test runners and browser tests.

Their environments live with the others in `swebounty.envs` (`node_versions`, `node_project`,
`node_build`, `node_manager`). Here: `runner` and `results` (Jest/Vitest/Mocha with structured
results, ids matched as datasets name them), `evaluate` (workspace, environment, patches,
sandboxed tests) and `grading` (the verdict), `e2e` (the app and hidden Playwright tests in one
sandbox, with the app driver of `swebounty.services` and `e2e_plugin` copied into it).
"""
