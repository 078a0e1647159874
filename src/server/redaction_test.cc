#include "server/redaction.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

TEST(Redactor, BuiltInPatterns) {
  const Redactor r = Redactor::make("").value();
  EXPECT_EQ(r.apply("write to jane.doe+x@mail.example.co.uk today"), "write to [email] today");
  // 4111 1111 1111 1111 passes the Luhn check; 4111 1111 1111 1112 does not (a phone-like
  // run of 16 digits is too long for a phone number, so it stays).
  EXPECT_EQ(r.apply("card 4111-1111-1111-1111."), "card [card].");
  EXPECT_EQ(r.apply("card 4111 1111 1111 1112"), "card 4111 1111 1111 1112");
  EXPECT_EQ(r.apply("call +44 20 7946 0958 or (555) 123-4567"), "call [phone] or ([phone]");
  // Short numbers, years, versions and identifiers glued to letters stay.
  EXPECT_EQ(r.apply("in 2019-2020, 3 items, v1.2.3, order A123456789"), "in 2019-2020, 3 items, v1.2.3, order A123456789");
}

TEST(Redactor, CustomPatternsAndErrors) {
  const Redactor r = Redactor::make("ticket-[0-9]+\n\nACME-[A-Z]+\n").value();
  EXPECT_EQ(r.apply("see ticket-42 and ACME-XYZ"), "see [redacted] and [redacted]");
  auto bad = Redactor::make("([unclosed");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("([unclosed"), std::string::npos);
}

}  // namespace
}  // namespace llms
