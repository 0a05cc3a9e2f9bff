"""The tumor board as a LangGraph state machine (opentumorboard.txt, §2.4), agents mode."""

from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.graph import BoardContext, board_graph

__all__ = ["BoardConfig", "BoardContext", "board_graph"]
