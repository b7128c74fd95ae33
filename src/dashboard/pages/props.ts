import type { SignupPolicy } from '../gql/graphql';

export interface PageProps {
  signupPolicy: SignupPolicy;
}
