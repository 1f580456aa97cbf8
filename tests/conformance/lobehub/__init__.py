"""LobeHub webhook bodies against their source: github.com/lobehub/lobehub,
packages/agent-runtime/src/types/hooks.ts."""
