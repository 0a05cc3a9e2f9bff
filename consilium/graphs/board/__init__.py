"""The tumor board (opentumorboard.txt, §2.4): agents mode, single mode and the Specialist Turn, each a
LangGraph graph; its transcript format and checks; its record types and its protocol object."""
