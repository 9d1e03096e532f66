"""Shortest paths on a grid with networkx (corpus: replay of a package nobody here wrote)."""

import networkx as nx

if __name__ == "__main__":
    grid = nx.grid_2d_graph(5, 5)
    for (a, b) in list(grid.edges())[::3]:
        grid.edges[a, b]["weight"] = 2
    path = nx.shortest_path(grid, (0, 0), (4, 4), weight="weight")
    lengths = nx.single_source_dijkstra_path_length(grid, (0, 0))
    print(len(path), path[:3], lengths[(4, 4)], sum(lengths.values()))
