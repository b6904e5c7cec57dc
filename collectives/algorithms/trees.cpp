// The trees the tree algorithms run on.
#include "collectives/algorithms/algorithms.hpp"

namespace sb {
namespace {

Tree from_parents(std::vector<int> parent) {
  Tree tree{std::move(parent), {}};
  tree.children.resize(tree.parent.size());
  for (size_t r = 0; r < tree.parent.size(); ++r)
    if (tree.parent[r] >= 0) tree.children[static_cast<size_t>(tree.parent[r])].push_back(static_cast<int>(r));
  return tree;
}

int trailing_zeros(int n) {
  int zeros = 0;
  while ((n & 1) == 0) {
    n >>= 1;
    ++zeros;
  }
  return zeros;
}

}  // namespace

Tree binomial_tree(int nranks) {
  // Rank r's parent is r with its lowest set bit cleared; rank 0 is the root.
  std::vector<int> parent(static_cast<size_t>(nranks), -1);
  for (int r = 1; r < nranks; ++r) parent[static_cast<size_t>(r)] = r & (r - 1);
  return from_parents(parent);
}

Tree inorder_binary_tree(int nranks, int shift) {
  // Number the roles 1..n in order; role m has height trailing_zeros(m), so the odd roles (even
  // ranks, when role = rank + 1) are the leaves. A role's parent is m - 2^h or m + 2^h, whichever
  // is a multiple of 2^(h+1) with an odd quotient; parents past n do not exist, and the search
  // climbs on past them. The root is the largest power of two <= n.
  const int n = nranks;
  auto rank_of_role = [&](int role) { return ((role - 1 - shift) % n + n) % n; };
  std::vector<int> parent(static_cast<size_t>(n), -1);
  for (int role = 1; role <= n; ++role) {
    int m = role, h = trailing_zeros(role);
    int found = -1;
    while ((1 << (h + 1)) <= 2 * n) {
      const int up = ((m >> (h + 1)) & 1) ? m - (1 << h) : m + (1 << h);
      ++h;
      m = up;
      if (up <= n) {
        found = up;
        break;
      }
    }
    if (found > 0) parent[static_cast<size_t>(rank_of_role(role))] = rank_of_role(found);
  }
  return from_parents(parent);
}

}  // namespace sb
