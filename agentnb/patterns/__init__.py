"""Orchestration in code: fan-out, aggregation, chains, writer–verifier cycles, code routing,
and the four topologies. Every entry point is a coroutine function: ``await agentnb.parallel(...)``
in a notebook cell, ``agentnb.run_sync(agentnb.parallel(...))`` in a script."""

from .aggregate import Judgement, JudgeVerdict, Vote, harshest, judge, majority
from .chains import ChainResult, chain
from .fan_out import FanOut, parallel
from .routing import HandoffRoute, Intent, Respond
from .topologies import Topology, hierarchy, mesh, pipeline, star
from .verify import Round, Verification, VerifyResult, verify_loop

__all__ = [
    "ChainResult",
    "FanOut",
    "HandoffRoute",
    "Intent",
    "JudgeVerdict",
    "Judgement",
    "Respond",
    "Round",
    "Topology",
    "Verification",
    "VerifyResult",
    "Vote",
    "chain",
    "harshest",
    "hierarchy",
    "judge",
    "majority",
    "mesh",
    "parallel",
    "pipeline",
    "star",
    "verify_loop",
]
