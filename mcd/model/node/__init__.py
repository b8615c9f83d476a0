"""What a node reports about itself: the health gate's settings, results and verdict, and its
MachineConfigNode status."""
